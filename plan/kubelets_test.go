package plan_test

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/translate"
)

// The kubelets' versions, as the nodes' status gives them: a kubelet newer
// than the API server, and one more than three minor releases older than
// the release the control plane moves to next, are named (a few nodes of
// each); kubelets within the skew are not.
func TestPlanKubeletSkew(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	node := func(name, version string) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{NodeInfo: v1.NodeSystemInfo{KubeletVersion: version}}}
	}
	p := plan.New(tr, logger, plan.Options{KubernetesMinor: 30, ServerVersion: "v1.30.14"})
	for i := range 5 {
		p.Add(node(fmt.Sprintf("old-%d", i), "v1.27.16"))
	}
	p.Add(node("ok-1", "v1.28.15"))
	p.Add(node("ok-2", "v1.30.14"))
	p.Add(node("new-1", "v1.31.2"))
	p.Add(node("unknown", ""))
	codes := map[string]string{}
	for _, f := range p.Finish().Hazards {
		codes[f.Code] = f.Message + " / " + f.Remedy
	}
	if m := codes[plan.FindingKubeletTooOld]; !strings.Contains(m, "1.27 on nodes old-0, old-1, old-2 and 2 more") || !strings.Contains(m, "1.31, the release the control plane moves to next") ||
		!strings.Contains(m, "to 1.28 or later") || strings.Contains(m, "ok-") {
		t.Errorf("KubeletTooOld: %q", m)
	}
	if m := codes[plan.FindingKubeletNewerThanAPIServer]; !strings.Contains(m, "1.31 on node new-1") || strings.Contains(m, "ok-") {
		t.Errorf("KubeletNewerThanAPIServer: %q", m)
	}

	// Within the skew: nothing said.
	p = plan.New(tr, logger, plan.Options{KubernetesMinor: 37, ServerVersion: "v1.37.2"})
	p.Add(node("a", "v1.35.1"))
	p.Add(node("b", "v1.37.2"))
	for _, f := range p.Finish().Hazards {
		if strings.HasPrefix(f.Code, "Kubelet") {
			t.Errorf("within the skew: %s %s", f.Code, f.Message)
		}
	}
}

package nodetest_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// textEvents writes the writer's events as lines, for a test's messages.
type textEvents struct{ w *bytes.Buffer }

func (e textEvents) Writing(obj rewrite.ObjectRef, what string) {
	fmt.Fprintf(e.w, "%s: %s\n", obj.Resource(), what)
}
func (e textEvents) Noted(obj rewrite.ObjectRef, what string) {
	fmt.Fprintf(e.w, "%s: %s\n", obj.Resource(), what)
}
func (e textEvents) KeptRetain(pv rewrite.ObjectRef, why string) {
	fmt.Fprintf(e.w, "%s: kept at %s\n", pv.Resource(), why)
}
func (e textEvents) Refused(obj rewrite.ObjectRef, r *rewrite.Refusal) {
	fmt.Fprintf(e.w, "%s: refused, left as it was: %s\n", obj.Resource(), r.Reason)
}

// rewritePVs runs a writer (state in kube-system, the only writer of its
// cluster) with options o over the PVs named, as apply's own tests do; it
// returns the writer and what its events said.
func rewritePVs(t testing.TB, c kubernetes.Interface, o apply.Options, pvs []string) (*apply.Writer, string, error) {
	t.Helper()
	tr, err := translate.New(translate.WithNodeExpandSecret(false))
	if err != nil {
		t.Fatal(err)
	}
	o.StateNamespace = "kube-system"
	o.Lease = apply.HolderFunc(func() bool { return true })
	var out bytes.Buffer
	w, err := apply.New(c, tr, klog.Background().V(100), textEvents{&out}, o)
	if err != nil {
		t.Fatal(err)
	}
	targets := make([]apply.Target, len(pvs))
	for i, n := range pvs {
		targets[i] = apply.Target{Name: n}
	}
	_, err = w.PVs(context.Background(), targets)
	return w, out.String(), err
}

func ptr[T any](v T) *T { return &v }

func getPV(t testing.TB, c kubernetes.Interface, name string) *v1.PersistentVolume {
	t.Helper()
	pv, err := c.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pv/%s: %v", name, err)
	}
	return pv
}

// unchanged fails unless the live PV is exactly before (same
// resourceVersion, so no write happened at all).
func unchanged(t *testing.T, c kubernetes.Interface, before *v1.PersistentVolume) {
	t.Helper()
	if diff := cmp.Diff(before, getPV(t, c, before.Name)); diff != "" {
		t.Errorf("pv/%s was changed (-before +now):\n%s", before.Name, diff)
	}
}

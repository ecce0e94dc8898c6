package output

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/csimigrate/csimigrate/plan"
)

// The rescue's commands, as an admin types them: the workloads scaled (a
// StatefulSet's stuck pods deleted after), the review and the apply of it
// with the same targets, the workloads scaled back to their replicas.
func TestRescueCommands(t *testing.T) {
	stop := plan.RescueStep{Step: plan.RescueStop, Objects: []string{"StatefulSet app/db", "Pod app/tool", "DaemonSet app/agent"}, Replicas: []string{"3", "", ""}, Delete: []string{"app/db-0"}}
	start := stop
	start.Step, start.Delete = plan.RescueStart, nil
	rw := plan.RescueStep{Step: plan.RescueRewrite, Objects: []string{"pv-a", "storageclass/rbd"}}
	got := [][]string{rescueCommands(stop), rescueCommands(rw), rescueCommands(start)}
	want := [][]string{
		{"kubectl scale statefulset db -n app --replicas=0", "kubectl delete pod tool -n app",
			"# DaemonSet app/agent has no replicas to scale: stop its pods another way (a DaemonSet's node selector, a Job's completion)",
			"kubectl delete pod db-0 -n app    # stuck: the StatefulSet's scale-down waits on it"},
		{"csimigrate rewrite pv-a storageclass/rbd > review.sh    # review: the steps, or what is refused and why",
			"csimigrate rewrite -apply -review review.sh pv-a storageclass/rbd    # what was reviewed, or nothing"},
		{"kubectl scale statefulset db -n app --replicas=3", "kubectl apply -f <the manifest of pod app/tool>",
			"# DaemonSet app/agent has no replicas to scale: stop its pods another way (a DaemonSet's node selector, a Job's completion)"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// The apply takes the review's targets.
	review, _, _ := strings.Cut(strings.TrimPrefix(got[1][0], "csimigrate rewrite "), " >")
	apply, _, _ := strings.Cut(strings.TrimPrefix(got[1][1], "csimigrate rewrite -apply -review review.sh "), "    #")
	if review != apply {
		t.Errorf("review %q, apply %q", review, apply)
	}
}

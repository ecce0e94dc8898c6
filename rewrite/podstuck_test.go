package rewrite_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/rewrite"
)

// PodStuck reads what kubectl and the kubelet show of a pod that cannot
// start: a container (or init container) waiting in ContainerCreating, or
// PodReadyToStartContainers False; nothing for a running, finished,
// deleted or unscheduled pod.
func TestPodStuck(t *testing.T) {
	waiting := func(reason string) []v1.ContainerStatus {
		return []v1.ContainerStatus{{Name: "c", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}}}
	}
	noSandbox := []v1.PodCondition{{Type: v1.PodReadyToStartContainers, Status: v1.ConditionFalse}}
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{"nil", nil, ""},
		{"creating", &v1.Pod{Spec: v1.PodSpec{NodeName: "n"}, Status: v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: waiting("ContainerCreating")}}, "ContainerCreating"},
		{"init creating", &v1.Pod{Spec: v1.PodSpec{NodeName: "n"}, Status: v1.PodStatus{Phase: v1.PodPending, InitContainerStatuses: waiting("ContainerCreating")}}, "ContainerCreating"},
		{"no sandbox after a restart", &v1.Pod{Spec: v1.PodSpec{NodeName: "n"}, Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: noSandbox}}, "PodReadyToStartContainers False"},
		{"image pull", &v1.Pod{Spec: v1.PodSpec{NodeName: "n"}, Status: v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: waiting("ImagePullBackOff")}}, ""},
		{"running", &v1.Pod{Spec: v1.PodSpec{NodeName: "n"}, Status: v1.PodStatus{Phase: v1.PodRunning}}, ""},
		{"not scheduled", &v1.Pod{Status: v1.PodStatus{Phase: v1.PodPending, Conditions: noSandbox}}, ""},
		{"failed", &v1.Pod{Spec: v1.PodSpec{NodeName: "n"}, Status: v1.PodStatus{Phase: v1.PodFailed, Conditions: noSandbox}}, ""},
		{"being deleted", &v1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Spec: v1.PodSpec{NodeName: "n"}, Status: v1.PodStatus{Conditions: noSandbox}}, ""},
	} {
		if got := rewrite.PodStuck(tc.pod); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

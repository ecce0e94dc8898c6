package plan_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/translate"
)

// rescueInput is a cluster past the removal as the rescue meets it: an
// in-tree RBD PV of an in-tree class, bound to a claim that a StatefulSet's
// pod uses, stuck in ContainerCreating; a second PV whose pod of its own
// still runs; no Ceph CSI installed (the drivers and nodes listed, none
// there).
func rescueInput(p *plan.Planner) {
	ctrl, three := true, int32(3)
	p.Listed("csidrivers")
	p.Listed("csinodes")
	stuck := v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{{Name: "db", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}
	use := func(claim string) v1.PodSpec {
		return v1.PodSpec{NodeName: "n1", Volumes: []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}
	}
	objs := []any{
		secret("admin", "key", "AQBs3cr3t"),
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "rbd"}, Provisioner: plugin.RBDInTreePluginName,
			Parameters: map[string]string{"monitors": testMonitor, "adminSecretName": "admin", "adminSecretNamespace": "ns", "pool": "rbd"}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Spec: appsv1.StatefulSetSpec{Replicas: &three}},
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db-0", OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "db", Controller: &ctrl}}},
			Spec: use("data"), Status: stuck},
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tool"}, Spec: use("logs"), Status: v1.PodStatus{Phase: v1.PodRunning}},
	}
	for _, pv := range []struct{ name, claim, class string }{{"a", "data", "rbd"}, {"b", "logs", ""}} {
		v := rbdPV(pv.name, "", "admin")
		v.Spec.StorageClassName = pv.class
		v.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: pv.claim}
		objs = append(objs, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: pv.claim}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: pv.name}}, v)
	}
	for _, o := range objs {
		p.Add(o)
	}
}

// Past the removal the plan says first what is broken (each in-tree RBD
// PV, its pods with what their status shows, their workloads), then the
// rescue in order: the driver (installed by the ceph-csi-operator, whose
// objects carry the entries), the workloads stopped with their replicas,
// the rewrite of the PVs and the in-tree class, the workloads started.
// On 1.30, which still has the plugin, nothing is broken.
func TestPlanRescue(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	p := plan.New(tr, logger, plan.Options{KubernetesMinor: 37})
	rescueInput(p)
	r := p.Finish()
	wantBroken := []plan.BrokenVolume{
		{PV: "a", Plugin: plugin.RBDInTreePluginName, Claim: "ns/data", Pods: []plan.StuckPod{{Pod: "ns/db-0", Stuck: "ContainerCreating", Phase: "Pending", Workload: "StatefulSet ns/db"}}},
		{PV: "b", Plugin: plugin.RBDInTreePluginName, Claim: "ns/logs", Pods: []plan.StuckPod{{Pod: "ns/tool", Phase: "Running"}}},
	}
	if diff := cmp.Diff(wantBroken, r.Broken); diff != "" {
		t.Errorf("broken (-want +got):\n%s", diff)
	}
	type step struct {
		Step                      string
		Objects, Replicas, Delete []string
	}
	var got []step
	for _, s := range r.Rescue {
		if s.Text == "" {
			t.Errorf("step %s says nothing", s.Step)
		}
		got = append(got, step{s.Step, s.Objects, s.Replicas, s.Delete})
	}
	// The StatefulSet's stuck pod is deleted after the scale-down, which
	// waits on it.
	want := []step{
		{plan.RescueDriver, []string{plugin.RBDDriverName}, nil, nil},
		{plan.RescueStop, []string{"StatefulSet ns/db", "Pod ns/tool"}, []string{"3", ""}, []string{"ns/db-0"}},
		{plan.RescueRewrite, []string{"a", "b", "storageclass/rbd"}, nil, nil},
		{plan.RescueStart, []string{"StatefulSet ns/db", "Pod ns/tool"}, []string{"3", ""}, nil},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rescue (-want +got):\n%s", diff)
	}

	p = plan.New(tr, logger, plan.Options{KubernetesMinor: 30})
	rescueInput(p)
	if r := p.Finish(); len(r.Broken) != 0 || len(r.Rescue) != 0 {
		t.Errorf("on 1.30: broken %+v, rescue %+v; want none", r.Broken, r.Rescue)
	}
}

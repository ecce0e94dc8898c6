package apply

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// nextStep is the name of the step a run takes in the state it observed,
// "" when every step is done.
func nextStep(r *pvRun) string {
	for _, s := range pvSteps {
		if !s.done(r) {
			return s.name
		}
	}
	return ""
}

// The PV steps in isolation: in each state a run can observe (the live PV,
// the saved state), the step it takes next, for the rewrite and the undo.
// Every state of an interrupted run has exactly one next step, and a
// finished run none.
func TestStepInEachState(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Unix(1700000000, 0))
	inTree := func(policy v1.PersistentVolumeReclaimPolicy, edit func(*v1.PersistentVolume)) *v1.PersistentVolume {
		pv := testenv.BoundPV("pv", "ns", "claim", "uid-1", v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[ds] kubevols/pv.vmdk"}})
		pv.Spec.PersistentVolumeReclaimPolicy = policy
		if edit != nil {
			edit(pv)
		}
		return pv
	}
	csi := func(policy v1.PersistentVolumeReclaimPolicy, edit func(*v1.PersistentVolume)) *v1.PersistentVolume {
		pv := testenv.BoundPV("pv", "ns", "claim", "uid-1", v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "csi.vsphere.vmware.com", VolumeHandle: "[ds] kubevols/pv.vmdk"}})
		pv.Annotations = map[string]string{rewrite.AnnMigratedFrom: "kubernetes.io/vsphere-volume"}
		pv.Spec.PersistentVolumeReclaimPolicy = policy
		if edit != nil {
			edit(pv)
		}
		return pv
	}
	pending := func(pv *v1.PersistentVolume) { pv.Annotations[rewrite.AnnReclaimPolicy] = "Delete" }
	pendingInTree := func(pv *v1.PersistentVolume) { pv.Annotations = map[string]string{rewrite.AnnReclaimPolicy: "Delete"} }
	deleting := func(pv *v1.PersistentVolume) { pv.DeletionTimestamp = &now }
	deletingUnheld := func(pv *v1.PersistentVolume) { pv.DeletionTimestamp, pv.Finalizers = &now, nil }
	held := func(pv *v1.PersistentVolume) { pv.Finalizers = append(pv.Finalizers, rewrite.DeletionProtection[0]) }
	state := &rewriteState{PV: "pv"}
	for _, tc := range []struct {
		name  string
		undo  bool
		cur   *v1.PersistentVolume
		state *rewriteState
		want  string
	}{
		{"in-tree, Delete", false, inTree(v1.PersistentVolumeReclaimDelete, nil), nil, "1. set reclaim policy Retain"},
		{"in-tree, Retain, held by the PV controller", false, inTree(v1.PersistentVolumeReclaimRetain, held), nil, "1. (wait for the deletion-protection finalizers' owners)"},
		{"in-tree, Retain", false, inTree(v1.PersistentVolumeReclaimRetain, nil), nil, "2. save the replacement in a ConfigMap"},
		{"in-tree, saved", false, inTree(v1.PersistentVolumeReclaimRetain, nil), state, "3. delete the PV object"},
		{"in-tree, deleted, held by pv-protection", false, inTree(v1.PersistentVolumeReclaimRetain, deleting), state, "4. remove pv-protection from the deleted object"},
		{"in-tree, deleted, no finalizer", false, inTree(v1.PersistentVolumeReclaimRetain, deletingUnheld), state, "3. (wait for the deletion)"},
		{"gone, saved", false, nil, state, "5. create the replacement"},
		{"CSI created, policy pending", false, csi(v1.PersistentVolumeReclaimRetain, pending), state, "6. restore the reclaim policy"},
		{"CSI, policy restored, state left", false, csi(v1.PersistentVolumeReclaimDelete, nil), state, "7. remove the saved replacement"},
		{"CSI, done", false, csi(v1.PersistentVolumeReclaimDelete, nil), nil, ""},
		{"CSI, policy pending without state (an undo's step 1 undone)", false, csi(v1.PersistentVolumeReclaimRetain, pending), nil, "6. restore the reclaim policy"},

		{"undo: CSI, Delete", true, csi(v1.PersistentVolumeReclaimDelete, nil), nil, "1. set reclaim policy Retain"},
		{"undo: CSI, Retain", true, csi(v1.PersistentVolumeReclaimRetain, nil), nil, "2. save the replacement in a ConfigMap"},
		{"undo: CSI, saved", true, csi(v1.PersistentVolumeReclaimRetain, nil), state, "3. delete the PV object"},
		{"undo: CSI, deleted", true, csi(v1.PersistentVolumeReclaimRetain, deleting), state, "4. remove pv-protection from the deleted object"},
		{"undo: gone, saved", true, nil, state, "5. create the replacement"},
		{"undo: in-tree created, policy pending", true, inTree(v1.PersistentVolumeReclaimRetain, pendingInTree), state, "6. restore the reclaim policy"},
		{"undo: in-tree, state left", true, inTree(v1.PersistentVolumeReclaimDelete, nil), state, "7. remove the saved replacement"},
		{"undo: in-tree, done", true, inTree(v1.PersistentVolumeReclaimDelete, nil), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Writer{tr: tr, logger: klog0()}
			if tc.undo {
				a.o.Direction = Undo
			}
			r := &pvRun{a: a, dir: a.Direction(), t: Target{Name: "pv"}, cur: tc.cur, state: tc.state}
			r.classify()
			if got := nextStep(r); got != tc.want {
				t.Errorf("next step %q, want %q", got, tc.want)
			}
		})
	}
}

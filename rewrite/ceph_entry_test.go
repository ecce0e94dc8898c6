package rewrite_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/rewrite"
)

// The entry a Ceph PV's migrated form needs: its monitors' entry under the
// clusterID its translation names; none for another plugin or nil.
func TestCephEntryNeeded(t *testing.T) {
	mons := ceph.EntryFor([]string{"10.0.0.1:6789"})
	rbd := rbdPV("", &v1.SecretReference{Name: "s", Namespace: "ns"})
	if e, ok := rewrite.CephEntryNeeded(rbd, nil); !ok || e.ClusterID != mons.ClusterID || len(e.Monitors) != 1 {
		t.Errorf("RBD without translation: %+v %v, want %s", e, ok, mons.ClusterID)
	}
	out := translated(t, rbd)
	out.Spec.CSI.VolumeAttributes["clusterID"] = "rook-ceph"
	before := out.DeepCopy()
	if e, ok := rewrite.CephEntryNeeded(rbd, out); !ok || e.ClusterID != "rook-ceph" || e.Monitors[0] != "10.0.0.1:6789" {
		t.Errorf("RBD whose translation names clusterID rook-ceph: %+v %v", e, ok)
	}
	if out.String() != before.String() {
		t.Error("the translation was modified")
	}
	if e, ok := rewrite.CephEntryNeeded(cephFSPV(nil), nil); !ok || e.ClusterID != mons.ClusterID {
		t.Errorf("CephFS: %+v %v", e, ok)
	}
	vs := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[ds] a.vmdk"}}}}
	if _, ok := rewrite.CephEntryNeeded(vs, nil); ok {
		t.Error("an entry for a vSphere PV")
	}
	if _, ok := rewrite.CephEntryNeeded(nil, nil); ok {
		t.Error("an entry for nil")
	}
}

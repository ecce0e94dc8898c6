package rewrite

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csimigrate/csimigrate/plugins/ceph"
)

// CephEntryNeeded is the Ceph CSI cluster entry the migrated form of an
// in-tree RBD or CephFS PV needs the driver to serve: the entry of its
// monitors, under the clusterID its translation out names (nil out: the
// monitors' own). ok is false for a PV of another plugin. Neither argument
// is modified.
func CephEntryNeeded(pv, out *v1.PersistentVolume) (e ceph.ClusterEntry, ok bool) {
	switch {
	case pv == nil:
		return ceph.ClusterEntry{}, false
	case pv.Spec.RBD != nil:
		e = ceph.EntryFor(pv.Spec.RBD.CephMonitors)
	case pv.Spec.CephFS != nil:
		e = ceph.EntryFor(pv.Spec.CephFS.Monitors)
	default:
		return ceph.ClusterEntry{}, false
	}
	if out != nil && out.Spec.CSI != nil {
		if id := out.Spec.CSI.VolumeAttributes["clusterID"]; id != "" {
			e.ClusterID = id
		}
	}
	return e, true
}

// ClassCephEntryNeeded is the Ceph CSI cluster entry the CSI form out of an
// in-tree RBD StorageClass needs the driver to serve for the volumes it
// provisions: its monitors' entry under the clusterID out names. ok is false
// for a class of another kind, or one whose form names no monitors. Neither
// argument is modified.
func ClassCephEntryNeeded(out *storagev1.StorageClass) (e ceph.ClusterEntry, ok bool) {
	if out == nil {
		return ceph.ClusterEntry{}, false
	}
	mons, id := out.Parameters["monitors"], out.Parameters["clusterID"]
	if mons == "" || id == "" {
		return ceph.ClusterEntry{}, false
	}
	return ceph.ClusterEntry{ClusterID: id, Monitors: strings.Split(mons, ",")}, true
}

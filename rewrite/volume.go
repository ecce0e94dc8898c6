package rewrite

import (
	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/cephfs"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
	"github.com/csimigrate/csimigrate/volumeid"
)

// VolumeKey names the volume a PV of any form (in-tree, rewritten, adopted)
// names, so that PVs naming the same volume have the same key: a Ceph RBD
// image by cluster, pool and image ("clusterID/pool/image"), a CephFS path
// ("cephfs:/volumes/..."; of any cluster and file system: a false match
// only keeps a volume from adoption), a vSphere disk by its datastore path
// or First Class Disk ("vsphere:..."). ok is false for a PV of another
// plugin or one that names no volume it can tell. pv is not modified.
func VolumeKey(pv *v1.PersistentVolume) (key string, ok bool) {
	if pv == nil {
		return "", false
	}
	csiOf := func(inTree string) *v1.CSIPersistentVolumeSource {
		if c := pv.Spec.CSI; c != nil && plugin.InTreeNameOfDriver(c.Driver) == inTree {
			return c
		}
		return nil
	}
	switch {
	case pv.Spec.CephFS != nil:
		return "cephfs:" + cephfs.RootPath(pv.Spec.CephFS.Path), true
	case csiOf(plugin.CephFSInTreePluginName) != nil:
		a := pv.Spec.CSI.VolumeAttributes
		if p := a["rootPath"]; p != "" {
			return "cephfs:" + p, true
		}
		if p := a["subvolumePath"]; p != "" {
			return "cephfs:" + p, true
		}
		return "", false
	case pv.Spec.VsphereVolume != nil:
		return "vsphere:" + vsphere.CanonicalVolumePath(pv.Spec.VsphereVolume.VolumePath), true
	case csiOf(plugin.VSphereInTreePluginName) != nil:
		if from := pv.Annotations[adopt.AnnAdoptedFrom]; from != "" {
			return "vsphere:" + from, true
		}
		return "vsphere:" + pv.Spec.CSI.VolumeHandle, true
	case pv.Spec.RBD != nil:
		h, _ := volumeid.NewRBDHandle(pv.Spec.RBD.CephMonitors, pv.Spec.RBD.RBDPool, pv.Spec.RBD.RBDImage)
		pool := volumeid.RBDPool(pv.Spec.RBD.RBDPool)
		return h.ClusterID + "/" + pool + "/" + pv.Spec.RBD.RBDImage, true
	case csiOf(plugin.RBDInTreePluginName) != nil:
		a := pv.Spec.CSI.VolumeAttributes
		cluster, pool, image := a["clusterID"], a["pool"], a["imageName"]
		if h, err := volumeid.CephCSIReadRBDHandle(pv.Spec.CSI.VolumeHandle); err == nil {
			if image == "" {
				image, pool = h.Image, h.Pool
			}
			if cluster == "" {
				cluster = h.ClusterID
			}
		}
		if image == "" {
			return "", false
		}
		pool = volumeid.RBDPool(pool)
		return cluster + "/" + pool + "/" + image, true
	}
	return "", false
}

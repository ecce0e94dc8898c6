package plugin

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// NonMutating is implemented by plugins that promise never to modify their
// arguments and never to return objects sharing memory with them. The
// translator skips its defensive copy for them. Every plugin in this module
// implements it; csi-translation-lib's plugins do not (they modify the PV
// they are given), so the translator copies before calling them.
type NonMutating interface {
	// DoesNotModifyInputs is a marker; it does nothing.
	DoesNotModifyInputs()
}

// In-tree plugin names of every in-tree source that ever had a CSI
// migration translator, including those this module does not ship.
const (
	AWSEBSInTreePluginName    = "kubernetes.io/aws-ebs"
	GCEPDInTreePluginName     = "kubernetes.io/gce-pd"
	AzureDiskInTreePluginName = "kubernetes.io/azure-disk"
	AzureFileInTreePluginName = "kubernetes.io/azure-file"
	CinderInTreePluginName    = "kubernetes.io/cinder"
	PortworxInTreePluginName  = "kubernetes.io/portworx-volume"
	VSphereInTreePluginName   = "kubernetes.io/vsphere-volume"
	RBDInTreePluginName       = "kubernetes.io/rbd"
	CephFSInTreePluginName    = "kubernetes.io/cephfs"
)

// CSI driver names of the in-tree plugins this module translates.
const (
	RBDDriverName     = "rbd.csi.ceph.com"
	CephFSDriverName  = "cephfs.csi.ceph.com"
	VSphereDriverName = "csi.vsphere.vmware.com"
)

// inTreeSources says which source field of a PV and of a pod's volume
// names each in-tree plugin, in the order InTreeNameOfPV and
// InTreeNameOfVolume look: one table for both.
var inTreeSources = [...]struct {
	name string
	pv   func(*v1.PersistentVolumeSource) bool
	vol  func(*v1.VolumeSource) bool
}{
	{RBDInTreePluginName, func(s *v1.PersistentVolumeSource) bool { return s.RBD != nil }, func(s *v1.VolumeSource) bool { return s.RBD != nil }},
	{CephFSInTreePluginName, func(s *v1.PersistentVolumeSource) bool { return s.CephFS != nil }, func(s *v1.VolumeSource) bool { return s.CephFS != nil }},
	{VSphereInTreePluginName, func(s *v1.PersistentVolumeSource) bool { return s.VsphereVolume != nil }, func(s *v1.VolumeSource) bool { return s.VsphereVolume != nil }},
	{AWSEBSInTreePluginName, func(s *v1.PersistentVolumeSource) bool { return s.AWSElasticBlockStore != nil }, func(s *v1.VolumeSource) bool { return s.AWSElasticBlockStore != nil }},
	{GCEPDInTreePluginName, func(s *v1.PersistentVolumeSource) bool { return s.GCEPersistentDisk != nil }, func(s *v1.VolumeSource) bool { return s.GCEPersistentDisk != nil }},
	{AzureDiskInTreePluginName, func(s *v1.PersistentVolumeSource) bool { return s.AzureDisk != nil }, func(s *v1.VolumeSource) bool { return s.AzureDisk != nil }},
	{AzureFileInTreePluginName, func(s *v1.PersistentVolumeSource) bool { return s.AzureFile != nil }, func(s *v1.VolumeSource) bool { return s.AzureFile != nil }},
	{CinderInTreePluginName, func(s *v1.PersistentVolumeSource) bool { return s.Cinder != nil }, func(s *v1.VolumeSource) bool { return s.Cinder != nil }},
	{PortworxInTreePluginName, func(s *v1.PersistentVolumeSource) bool { return s.PortworxVolume != nil }, func(s *v1.VolumeSource) bool { return s.PortworxVolume != nil }},
}

// KnownInTreeNames lists the in-tree plugin names that [InTreeNameOfPV]
// and [InTreeNameOfVolume] can return.
var KnownInTreeNames = func() []string {
	names := make([]string, len(inTreeSources))
	for i, s := range inTreeSources {
		names[i] = s.name
	}
	return names
}()

// InTreeNameOfPV returns the in-tree plugin name of the source set in pv, or
// "" when none of the known ones is set.
func InTreeNameOfPV(pv *v1.PersistentVolume) string {
	if pv == nil {
		return ""
	}
	for _, s := range &inTreeSources {
		if s.pv(&pv.Spec.PersistentVolumeSource) {
			return s.name
		}
	}
	return ""
}

// InTreeNameOfVolume is InTreeNameOfPV for a pod's inline volume.
func InTreeNameOfVolume(vol *v1.Volume) string {
	if vol == nil {
		return ""
	}
	for _, s := range &inTreeSources {
		if s.vol(&vol.VolumeSource) {
			return s.name
		}
	}
	return ""
}

// Provisioners outside Kubernetes that create PVs with in-tree sources (the
// retired kubernetes-retired/external-storage provisioners). Their PVs carry
// the in-tree source and pv.kubernetes.io/provisioned-by naming them; after
// Kubernetes removed the in-tree plugin no kubelet mounts what they create,
// so their StorageClasses must be replaced like the in-tree plugins' own.
const (
	// CephRBDExternalProvisioner took the in-tree RBD StorageClass
	// parameters.
	CephRBDExternalProvisioner = "ceph.com/rbd"
	// CephFSExternalProvisioner made one directory and one Ceph user per
	// claim, and deleted both with the claim.
	CephFSExternalProvisioner = "ceph.com/cephfs"
)

// InTreeNameOfProvisioner returns the in-tree plugin whose sources the
// StorageClass provisioner p creates: p itself for an in-tree plugin name of
// KnownInTreeNames, the plugin of an external provisioner that writes
// in-tree sources (CephRBDExternalProvisioner, CephFSExternalProvisioner),
// and "" otherwise.
func InTreeNameOfProvisioner(p string) string {
	switch p {
	case CephRBDExternalProvisioner:
		return RBDInTreePluginName
	case CephFSExternalProvisioner:
		return CephFSInTreePluginName
	}
	for _, n := range KnownInTreeNames {
		if n == p {
			return p
		}
	}
	return ""
}

// InTreeNameOfDriver returns the in-tree plugin whose volumes the CSI driver
// named driver serves: RBDInTreePluginName for RBDDriverName, CephFS and
// vSphere likewise, and, since Ceph CSI runs under any name its deployment
// gives it, for a Ceph CSI name with a prefix ("<prefix>.rbd.csi.ceph.com",
// as Rook and the ceph-csi-operator name their drivers, for example
// "rook-ceph.rbd.csi.ceph.com"). It returns "" for other drivers.
func InTreeNameOfDriver(driver string) string {
	for _, d := range []struct{ inTree, name string }{{RBDInTreePluginName, RBDDriverName}, {CephFSInTreePluginName, CephFSDriverName}} {
		if driver == d.name || len(driver) > len(d.name)+1 && strings.HasSuffix(driver, "."+d.name) {
			return d.inTree
		}
	}
	if driver == VSphereDriverName {
		return VSphereInTreePluginName
	}
	return ""
}

// UpstreamDriverName returns the CSI driver's upstream name for the in-tree
// plugins this module translates (RBDDriverName for RBDInTreePluginName, and
// so on), "" for others: the name a driver has where its deployment does not
// change it, and the only one Kubernetes' own CSI migration routes to.
func UpstreamDriverName(inTree string) string {
	switch inTree {
	case RBDInTreePluginName:
		return RBDDriverName
	case CephFSInTreePluginName:
		return CephFSDriverName
	case VSphereInTreePluginName:
		return VSphereDriverName
	}
	return ""
}

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

// KnownInTreeNames lists the in-tree plugin names that [InTreeNameOfPV]
// and [InTreeNameOfVolume] can return.
var KnownInTreeNames = []string{AWSEBSInTreePluginName, GCEPDInTreePluginName, AzureDiskInTreePluginName,
	AzureFileInTreePluginName, CinderInTreePluginName, PortworxInTreePluginName, VSphereInTreePluginName,
	RBDInTreePluginName, CephFSInTreePluginName}

// InTreeNameOfPV returns the in-tree plugin name of the source set in pv, or
// "" when none of the known ones is set.
func InTreeNameOfPV(pv *v1.PersistentVolume) string {
	// This and InTreeNameOfVolume are two switches, one per source type,
	// rather than one table of field readers: the translator dispatches
	// every call through them, and a table made a PV of no in-tree plugin
	// five times slower to place (21.7 ns instead of 4.3, measured). Their
	// test sets each source in both.
	if pv == nil {
		return ""
	}
	s := &pv.Spec.PersistentVolumeSource
	switch {
	case s.RBD != nil:
		return RBDInTreePluginName
	case s.CephFS != nil:
		return CephFSInTreePluginName
	case s.VsphereVolume != nil:
		return VSphereInTreePluginName
	case s.AWSElasticBlockStore != nil:
		return AWSEBSInTreePluginName
	case s.GCEPersistentDisk != nil:
		return GCEPDInTreePluginName
	case s.AzureDisk != nil:
		return AzureDiskInTreePluginName
	case s.AzureFile != nil:
		return AzureFileInTreePluginName
	case s.Cinder != nil:
		return CinderInTreePluginName
	case s.PortworxVolume != nil:
		return PortworxInTreePluginName
	}
	return ""
}

// InTreeNameOfVolume is InTreeNameOfPV for a pod's inline volume.
func InTreeNameOfVolume(vol *v1.Volume) string {
	if vol == nil {
		return ""
	}
	s := &vol.VolumeSource
	switch {
	case s.RBD != nil:
		return RBDInTreePluginName
	case s.CephFS != nil:
		return CephFSInTreePluginName
	case s.VsphereVolume != nil:
		return VSphereInTreePluginName
	case s.AWSElasticBlockStore != nil:
		return AWSEBSInTreePluginName
	case s.GCEPersistentDisk != nil:
		return GCEPDInTreePluginName
	case s.AzureDisk != nil:
		return AzureDiskInTreePluginName
	case s.AzureFile != nil:
		return AzureFileInTreePluginName
	case s.Cinder != nil:
		return CinderInTreePluginName
	case s.PortworxVolume != nil:
		return PortworxInTreePluginName
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

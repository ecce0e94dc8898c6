// Package sidecar is an example of the library for a CSI sidecar that serves
// in-tree volumes through the driver beside it, as external-provisioner does
// on its migration path: a claim of an in-tree StorageClass is provisioned
// with the class translated to the driver's parameters (secrets remapped),
// the PV is stored in its in-tree form, so that components that do not
// migrate the plugin still read it, and a stored in-tree PV is translated to
// CSI again when the volume is deleted.
package sidecar

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/translate"
)

// Migrator translates for one CSI driver. It is safe for concurrent use.
type Migrator struct {
	tr     *translate.Translator
	driver string
	inTree string
}

// New is the Migrator of the CSI driver named driver (as it registers itself:
// rbd.csi.ceph.com, or rook-ceph.rbd.csi.ceph.com under Rook), which
// replaces the in-tree plugin inTree (kubernetes.io/rbd, kubernetes.io/cephfs
// or kubernetes.io/vsphere-volume). cephConfig is the Ceph CSI driver's
// config.json as it reads it (ceph.ParseClusterConfig; empty for vSphere):
// the in-tree form of a Ceph volume names its cluster's monitors, which the
// driver's handle names only by clusterID.
func New(inTree, driver string, cephConfig ceph.ClusterConfig) (*Migrator, error) {
	tr, err := translate.New(translate.WithDriverName(inTree, driver), translate.WithCephClusterConfig(cephConfig))
	if err != nil {
		return nil, err
	}
	if got, err := tr.GetCSINameFromInTreeName(inTree); err != nil || got != driver {
		return nil, fmt.Errorf("in-tree plugin %q: no translation to driver %q (%v)", inTree, driver, err)
	}
	return &Migrator{tr: tr, driver: driver, inTree: inTree}, nil
}

// Class is sc in the form this driver provisions with (provisioner the
// driver, parameters translated), with ok true when sc names the in-tree
// plugin this driver replaces; ok is false for any other class. sc is not
// modified.
func (m *Migrator) Class(logger klog.Logger, sc *storagev1.StorageClass) (csi *storagev1.StorageClass, ok bool, err error) {
	if sc.Provisioner != m.inTree {
		return nil, false, nil
	}
	csi, err = m.tr.TranslateInTreeStorageClassToCSI(logger, m.inTree, sc)
	if err != nil {
		return nil, false, err
	}
	return csi, true, nil
}

// Stored is the PV to store for a volume the driver provisioned for an
// in-tree class: pv (the driver's CSI PV) in its in-tree form.
func (m *Migrator) Stored(pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	return m.tr.TranslateCSIPVToInTree(pv)
}

// ToDelete is a stored in-tree PV in the CSI form the driver deletes by.
func (m *Migrator) ToDelete(logger klog.Logger, pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	return m.tr.TranslateInTreePVToCSI(logger, pv)
}

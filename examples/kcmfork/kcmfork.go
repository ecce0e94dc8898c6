// Package kcmfork is an example of the library for a fork of
// kube-controller-manager, or any component that resolves volumes as its
// attach/detach and persistent-volume controllers do: it serves in-tree RBD,
// CephFS and vSphere volumes through their CSI drivers with csimigrate's
// translator where Kubernetes calls k8s.io/csi-translation-lib. A volume is
// translated on the fly, when it is resolved, under the component's own
// feature gates; nothing is stored.
package kcmfork

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/translate"
)

// Resolver tells, for one component, whether a volume is served by a CSI
// driver, and gives its CSI form. It is safe for concurrent use.
type Resolver struct {
	tr *translate.Translator
}

// NewResolver is the Resolver of a component of Kubernetes 1.minor with the
// feature gates gates (the component's own: during an upgrade
// kube-controller-manager's and each kubelet's may differ). It translates to
// the drivers named in drivers (in-tree plugin name to CSI driver name, as
// the cluster's CSIDriver objects name them; nil keeps the upstream names).
func NewResolver(gates featuregate.Gates, minor int, drivers map[string]string) (*Resolver, error) {
	tr, err := translate.New(translate.WithFeatureGates(gates, minor))
	if err != nil {
		return nil, err
	}
	if len(drivers) > 0 {
		if tr, err = tr.WithDriverNames(drivers); err != nil {
			return nil, err
		}
	}
	return &Resolver{tr: tr}, nil
}

// PV is pv as the component handles it: its CSI form, with csi true, when
// it is a CSI PV or its in-tree plugin is migrated under the component's
// gates; pv itself, with csi false, when an in-tree plugin still serves it.
// pv is not modified.
func (r *Resolver) PV(logger klog.Logger, pv *v1.PersistentVolume) (out *v1.PersistentVolume, csi bool, err error) {
	if pv.Spec.CSI != nil {
		return pv, true, nil
	}
	if !r.tr.IsPVMigratable(pv) {
		return pv, false, nil
	}
	out, err = r.tr.TranslateInTreePVToCSI(logger, pv)
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// Inline is a pod's inline volume as the component handles it: the CSI PV it
// translates to, with csi true, when its in-tree plugin is migrated; nil and
// false when an in-tree plugin (or no plugin csimigrate knows) serves it.
// podNamespace is the pod's (the volume's secrets are looked up there). vol
// is not modified.
func (r *Resolver) Inline(logger klog.Logger, vol *v1.Volume, podNamespace string) (*v1.PersistentVolume, bool, error) {
	if !r.tr.IsInlineMigratable(vol) {
		return nil, false, nil
	}
	pv, err := r.tr.TranslateInTreeInlineVolumeToCSI(logger, vol, podNamespace)
	if err != nil {
		return nil, false, err
	}
	return pv, true, nil
}

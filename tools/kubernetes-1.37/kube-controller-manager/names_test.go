package main

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	csitranslation "k8s.io/csi-translation-lib"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/volume"
	csiplugin "k8s.io/kubernetes/pkg/volume/csi"
	volumeutil "k8s.io/kubernetes/pkg/volume/util"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
)

// uniqueName is the volume name the kubelet's volume manager and the
// attach/detach controller track for a PV, computed by Kubernetes' own code
// (v1.37.2): the CSI plugin's GetVolumeName through
// GetUniqueVolumeNameFromSpec.
func uniqueName(t *rapid.T, pv *v1.PersistentVolume) v1.UniqueVolumeName {
	p := csiplugin.ProbeVolumePlugins()[0]
	n, err := volumeutil.GetUniqueVolumeNameFromSpec(p, volume.NewSpecFromPersistentVolume(pv, false))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// What csimigrate rewrite -online relies on, for vSphere (the plugin stock
// kubelets and kube-controller-managers of every release migrate): a running
// pod's in-tree PV, translated by Kubernetes 1.37's own translator as the
// kubelet and the attach/detach controller do, and the CSI PV the rewrite
// replaces it with have the same unique volume name and VolumeAttachment
// name, so nothing is unmounted, attached anew or detached. (RBD: the
// translator was removed with the plugin in 1.31; compat/ proves the handles
// equal to v0.30.14's. CephFS: never migrated by Kubernetes; -online refuses
// it.)
func TestVSphereNamesUnchangedByRewrite(t *testing.T) {
	stock := csitranslation.New()
	ours := vsphere.New(vsphere.Options{})
	logger := klog.Background().V(100)
	rapid.Check(t, func(t *rapid.T) {
		// An in-tree PV, or the one external-provisioner stores for a
		// volume the driver provisioned (our reverse translation, which
		// keeps the FCD ID for the next reverse translation).
		pv := gen.VSpherePV(t)
		if rapid.Bool().Draw(t, "provisioned") {
			stored, err := ours.TranslateCSIPVToInTree(gen.VSphereProvisionedPV(t))
			if err != nil {
				t.Fatal(err)
			}
			pv = stored
		}
		migrated, err := stock.TranslateInTreePVToCSI(logger, pv.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		rewritten, err := ours.TranslateInTreePVToCSI(logger, pv)
		if err != nil {
			t.Fatal(err)
		}
		before, after := uniqueName(t, migrated), uniqueName(t, rewritten)
		if p := pv.Spec.VsphereVolume.VolumePath; vsphere.CanonicalVolumePath(p) != p {
			// A path without ".vmdk": the stock handle is the bare path,
			// which the driver does not recognise as a migrated volume, so
			// no attachment with it can be in use; the rewrite's handle is
			// the path in-tree resolved. The names must differ, so that
			// -online, which requires a VolumeAttachment named for the
			// rewrite's handle, refuses such a PV in use.
			node := gen.DNSSubdomain().Draw(t, "node")
			if before == after || featuregate.AttachmentName(migrated.Spec.CSI.VolumeHandle, migrated.Spec.CSI.Driver, node) ==
				featuregate.AttachmentName(rewritten.Spec.CSI.VolumeHandle, rewritten.Spec.CSI.Driver, node) {
				t.Fatalf("path %q: the stock and rewritten names are equal (%s)", p, before)
			}
			return
		}
		if before != after {
			t.Fatalf("kubelet volume name %s before the rewrite, %s after", before, after)
		}
		node := gen.DNSSubdomain().Draw(t, "node")
		if a, b := featuregate.AttachmentName(migrated.Spec.CSI.VolumeHandle, migrated.Spec.CSI.Driver, node),
			featuregate.AttachmentName(rewritten.Spec.CSI.VolumeHandle, rewritten.Spec.CSI.Driver, node); a != b {
			t.Fatalf("VolumeAttachment %s before, %s after", a, b)
		}
	})
}

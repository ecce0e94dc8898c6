package compat

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	upstream "k8s.io/csi-translation-lib/plugins"
	"k8s.io/klog/v2"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/internal/gen"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
)

var logger = klog.Background().V(100)

// Every attribute upstream sets has the same value here, and the handle is
// byte-identical, for every generated RBD PV.
func TestRBDForwardMatchesUpstream(t *testing.T) {
	ours := rbd.New(rbd.Options{})
	theirs := upstream.NewRBDCSITranslator()
	rapid.Check(t, func(t *rapid.T) {
		pv := gen.RBDPV(t)
		if rapid.IntRange(0, 5).Draw(t, "annotatedHandle") == 0 {
			if pv.Annotations == nil {
				pv.Annotations = map[string]string{}
			}
			pv.Annotations[rbd.AnnVolumeHandle] = "0001-0009-cluster-1-0000000000000003-c867ff35-3f04-11ec-b823-0242ac110003"
			pv.Annotations[rbd.AnnClusterID] = "cluster-1"
		}
		got, err := ours.TranslateInTreePVToCSI(logger, pv)
		if err != nil {
			t.Fatal(err)
		}
		want, err := theirs.TranslateInTreePVToCSI(pv.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.CSI.VolumeHandle != want.Spec.CSI.VolumeHandle {
			t.Fatalf("handle %q, upstream %q", got.Spec.CSI.VolumeHandle, want.Spec.CSI.VolumeHandle)
		}
		for k, v := range want.Spec.CSI.VolumeAttributes {
			if g, ok := got.Spec.CSI.VolumeAttributes[k]; !ok || g != v {
				t.Fatalf("attribute %s = %q (present %v), upstream %q", k, g, ok, v)
			}
		}
		if diff := cmp.Diff(want.Spec.CSI.NodeStageSecretRef, got.Spec.CSI.NodeStageSecretRef); diff != "" {
			t.Fatalf("node-stage secret (-upstream +ours):\n%s", diff)
		}
		if diff := cmp.Diff(want.Spec.CSI.ControllerExpandSecretRef, got.Spec.CSI.ControllerExpandSecretRef); diff != "" {
			t.Fatalf("controller-expand secret (-upstream +ours):\n%s", diff)
		}
		if diff := cmp.Diff(want.Spec.AccessModes, got.Spec.AccessModes); diff != "" {
			t.Fatalf("access modes (-upstream +ours):\n%s", diff)
		}
		if got.Spec.CSI.Driver != want.Spec.CSI.Driver || got.Spec.CSI.FSType != want.Spec.CSI.FSType {
			t.Fatalf("driver/fsType %q/%q, upstream %q/%q", got.Spec.CSI.Driver, got.Spec.CSI.FSType, want.Spec.CSI.Driver, want.Spec.CSI.FSType)
		}
	})
}

// Upstream's StorageClass parameters appear here with the same values.
func TestRBDStorageClassMatchesUpstream(t *testing.T) {
	ours := rbd.New(rbd.Options{})
	theirs := upstream.NewRBDCSITranslator()
	rapid.Check(t, func(t *rapid.T) {
		sc := gen.RBDStorageClass(t)
		got, err := ours.TranslateInTreeStorageClassToCSI(logger, sc)
		if err != nil {
			t.Fatal(err)
		}
		want, err := theirs.TranslateInTreeStorageClassToCSI(sc.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range want.Parameters {
			if g, ok := got.Parameters[k]; !ok || g != v {
				t.Fatalf("parameter %s = %q (present %v), upstream %q", k, g, ok, v)
			}
		}
		if got.Provisioner != want.Provisioner {
			t.Fatalf("provisioner %q, upstream %q", got.Provisioner, want.Provisioner)
		}
	})
}

// The vSphere forward translation matches upstream: handle, attributes,
// node affinity and labels, over PVs with and without node affinity and
// labels, with GA and beta keys.
func TestVSphereForwardMatchesUpstream(t *testing.T) {
	ours := vsphere.New(vsphere.Options{})
	theirs := upstream.NewvSphereCSITranslator()
	rapid.Check(t, func(t *rapid.T) {
		pv := gen.VSpherePV(t)
		got, err := ours.TranslateInTreePVToCSI(logger, pv)
		if err != nil {
			t.Fatal(err)
		}
		want, err := theirs.TranslateInTreePVToCSI(pv.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.CSI.VolumeHandle != want.Spec.CSI.VolumeHandle {
			t.Fatalf("handle %q, upstream %q", got.Spec.CSI.VolumeHandle, want.Spec.CSI.VolumeHandle)
		}
		if diff := cmp.Diff(want.Spec.CSI.VolumeAttributes, got.Spec.CSI.VolumeAttributes); diff != "" {
			t.Fatalf("attributes (-upstream +ours):\n%s", diff)
		}
		if diff := cmp.Diff(want.Spec.NodeAffinity, got.Spec.NodeAffinity); diff != "" {
			t.Fatalf("node affinity (-upstream +ours):\n%s", diff)
		}
		if diff := cmp.Diff(want.Labels, got.Labels); diff != "" {
			t.Fatalf("labels (-upstream +ours):\n%s", diff)
		}
	})
}

// For StorageClasses upstream translates without loss, the parameters and
// zone topology match.
func TestVSphereStorageClassMatchesUpstream(t *testing.T) {
	ours := vsphere.New(vsphere.Options{AllowUnsupportedParameters: true})
	theirs := upstream.NewvSphereCSITranslator()
	rapid.Check(t, func(t *rapid.T) {
		sc := gen.VSphereStorageClass(t)
		got, err := ours.TranslateInTreeStorageClassToCSI(logger, sc)
		if err != nil {
			t.Fatal(err)
		}
		want, err := theirs.TranslateInTreeStorageClassToCSI(sc.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.Parameters, got.Parameters); diff != "" {
			t.Fatalf("parameters (-upstream +ours):\n%s", diff)
		}
		// Upstream leaves region keys alone; we translate them too.
		for i, term := range want.AllowedTopologies {
			for j, e := range term.MatchLabelExpressions {
				g := got.AllowedTopologies[i].MatchLabelExpressions[j]
				if e.Key == v1.LabelTopologyRegion || e.Key == v1.LabelFailureDomainBetaRegion {
					if g.Key != vsphere.DefaultRegionKey {
						t.Fatalf("region key %q not translated: %q", e.Key, g.Key)
					}
					continue
				}
				if diff := cmp.Diff(e, g); diff != "" {
					t.Fatalf("allowed topology (-upstream +ours):\n%s", diff)
				}
			}
		}
	})
}

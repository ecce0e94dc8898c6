package rewrite_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/translate"
)

func TestReplacement(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "rbd"}, Provisioner: "ceph.com/rbd",
		Parameters: map[string]string{"monitors": "10.0.0.1:6789", "adminId": "kube", "adminSecretName": "admin", "adminSecretNamespace": "sys"}}
	for _, tc := range []struct {
		name    string
		pv      *v1.PersistentVolume
		sc      *storagev1.StorageClass
		restore v1.PersistentVolumeReclaimPolicy
		kept    string // in KeptRetain
		delete  bool   // a deletion secret is named
	}{
		{"RBD of a ceph.com/rbd class", rbdPV("", &v1.SecretReference{Name: "s", Namespace: "ns"}), class, v1.PersistentVolumeReclaimDelete, "", true},
		{"RBD without class", rbdPV("", &v1.SecretReference{Name: "s", Namespace: "ns"}), nil, v1.PersistentVolumeReclaimRetain, "names no StorageClass", false},
		{"RBD whose handle resolves elsewhere", func() *v1.PersistentVolume {
			pv := rbdPV("", &v1.SecretReference{Name: "s", Namespace: "ns"})
			pv.Spec.RBD.RBDImage = "static"
			return pv
		}(), class, v1.PersistentVolumeReclaimRetain, "another image", true},
		{"CephFS", cephFSPV(nil), nil, v1.PersistentVolumeReclaimRetain, "never deletes", false},
	} {
		pv := tc.pv.DeepCopy()
		pv.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimDelete
		csi := translated(t, pv)
		before, csiBefore := pv.DeepCopy(), csi.DeepCopy()
		r, err := rewrite.Replacement(tr, logger, pv, csi, tr.CheckPV(pv), tc.sc, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if r.RestorePolicy != tc.restore || r.CSI.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain ||
			r.CSI.Annotations[rewrite.AnnReclaimPolicy] != string(tc.restore) || r.CSI.Annotations[rewrite.AnnPreRewritePolicy] != "Delete" {
			t.Errorf("%s: restore %s, replacement %s %v", tc.name, r.RestorePolicy, r.CSI.Spec.PersistentVolumeReclaimPolicy, r.CSI.Annotations)
		}
		if !strings.Contains(r.KeptRetain(), tc.kept) || (tc.kept == "") != (r.KeptRetain() == "") {
			t.Errorf("%s: KeptRetain %q, want %q", tc.name, r.KeptRetain(), tc.kept)
		}
		need, ok := r.DeletionNeed()
		if named := r.CSI.Annotations[secrets.AnnDeletionSecretName] != ""; named != tc.delete {
			t.Errorf("%s: deletion secret named %v, want %v", tc.name, named, tc.delete)
		}
		if ok != (tc.restore == v1.PersistentVolumeReclaimDelete && tc.delete) || ok && (need.Key() != "sys/admin" || need.User != "kube") {
			t.Errorf("%s: DeletionNeed %+v %v", tc.name, need, ok)
		}
		if diff := cmp.Diff(before, pv); diff != "" {
			t.Errorf("%s: the PV was modified:\n%s", tc.name, diff)
		}
		if diff := cmp.Diff(csiBefore, csi); diff != "" {
			t.Errorf("%s: the translation was modified:\n%s", tc.name, diff)
		}
	}
	blocked := rbdPV("", nil)
	if _, err := rewrite.Replacement(tr, logger, blocked, translated(t, blocked), tr.CheckPV(blocked), nil, nil); err == nil || !strings.Contains(err.Error(), "RBDNoSecretRef") {
		t.Errorf("a blocking finding: %v", err)
	}
	if _, err := rewrite.Replacement(nil, logger, nil, nil, nil, nil, nil); err == nil {
		t.Error("nil input accepted")
	}
}

// Over generated in-tree PVs (claims, policies, provisioners): Replacement
// modifies neither the PV nor its translation, and the replacement is a CSI
// PV of the same name and claim with Retain until the last step.
func TestReplacementProperty(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		pv := rapid.OneOf(rapid.Custom(gen.RBDPV), rapid.Custom(func(t *rapid.T) *v1.PersistentVolume { return gen.CephFSPV(t, false) }),
			rapid.Custom(gen.VSpherePV)).Draw(rt, "pv")
		csi, err := tr.TranslateInTreePVToCSI(logger, pv)
		if err != nil {
			rt.Skip("does not translate: no replacement to build")
		}
		var sc *storagev1.StorageClass
		if pv.Spec.RBD != nil && rapid.Bool().Draw(rt, "class") {
			sc = gen.RBDStorageClass(rt)
		}
		before, csiBefore := pv.DeepCopy(), csi.DeepCopy()
		r, err := rewrite.Replacement(tr, logger, pv, csi, tr.CheckPV(pv), sc, nil)
		if diff := cmp.Diff(before, pv); diff != "" {
			rt.Fatalf("the PV was modified:\n%s", diff)
		}
		if diff := cmp.Diff(csiBefore, csi); diff != "" {
			rt.Fatalf("the translation was modified:\n%s", diff)
		}
		if err != nil {
			return
		}
		if r.CSI.Name != pv.Name || r.CSI.Spec.CSI == nil || r.CSI.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain ||
			r.CSI.Annotations[rewrite.AnnMigratedFrom] != plugin.InTreeNameOfPV(pv) || !cmp.Equal(r.CSI.Spec.ClaimRef, pv.Spec.ClaimRef) {
			rt.Fatalf("replacement %+v", r.CSI)
		}
	})
}

// The adopted rewrite keeps Delete where only the migration handle's or the
// static volume's hazard kept Retain (the adopted volume is the driver's
// own, which it deletes), keeps every other reason, and is the rewrite
// otherwise.
func TestRewriteAdopted(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "rbd"}, Provisioner: "ceph.com/rbd",
		Parameters: map[string]string{"monitors": "10.0.0.1:6789", "adminId": "kube", "adminSecretName": "admin", "adminSecretNamespace": "sys"}}
	elsewhere := rbdPV("", &v1.SecretReference{Name: "s", Namespace: "ns"})
	elsewhere.Spec.RBD.RBDImage = "static"
	for _, tc := range []struct {
		name             string
		pv               *v1.PersistentVolume
		sc               *storagev1.StorageClass
		rewrite, adopted v1.PersistentVolumeReclaimPolicy
	}{
		{"RBD whose handle resolves elsewhere", elsewhere, class, v1.PersistentVolumeReclaimRetain, v1.PersistentVolumeReclaimDelete},
		{"CephFS", cephFSPV(nil), nil, v1.PersistentVolumeReclaimRetain, v1.PersistentVolumeReclaimDelete},
		{"RBD without class", rbdPV("", &v1.SecretReference{Name: "s", Namespace: "ns"}), nil, v1.PersistentVolumeReclaimRetain, v1.PersistentVolumeReclaimRetain},
		{"RBD of a ceph.com/rbd class", rbdPV("", &v1.SecretReference{Name: "s", Namespace: "ns"}), class, v1.PersistentVolumeReclaimDelete, v1.PersistentVolumeReclaimDelete},
	} {
		pv := tc.pv.DeepCopy()
		pv.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimDelete
		before := pv.DeepCopy()
		r, err := rewrite.Rewrite(tr, logger, pv, tc.sc, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		a, err := rewrite.RewriteAdopted(tr, logger, pv, tc.sc, nil)
		if err != nil {
			t.Fatalf("%s: adopted: %v", tc.name, err)
		}
		if r.RestorePolicy != tc.rewrite || a.RestorePolicy != tc.adopted {
			t.Errorf("%s: restore %s rewritten, %s adopted; want %s, %s", tc.name, r.RestorePolicy, a.RestorePolicy, tc.rewrite, tc.adopted)
		}
		r.CSI.Annotations[rewrite.AnnReclaimPolicy], a.CSI.Annotations[rewrite.AnnReclaimPolicy] = "", ""
		if diff := cmp.Diff(r.CSI, a.CSI); diff != "" {
			t.Errorf("%s: the adopted rewrite differs beyond the policy (-rewrite +adopted):\n%s", tc.name, diff)
		}
		if diff := cmp.Diff(before, pv); diff != "" {
			t.Errorf("%s: the PV was modified:\n%s", tc.name, diff)
		}
	}
	if _, err := rewrite.RewriteAdopted(nil, logger, nil, nil, nil); err == nil {
		t.Error("nil input accepted")
	}
}

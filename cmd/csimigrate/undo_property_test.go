package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// undoneAsStored is the in-tree PV an undo leaves after its last step, as
// the API server stores what it sends: the replacement with the recorded
// policy restored.
func undoneAsStored(in *v1.PersistentVolume) *v1.PersistentVolume {
	out := in.DeepCopy()
	out.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimPolicy(out.Annotations[rewrite.AnnReclaimPolicy])
	delete(out.Annotations, rewrite.AnnReclaimPolicy)
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	return out
}

// Rewrite then undo is the identity on a PV's name, labels, annotations and
// spec, for every in-tree PV the rewrite replaces; the undo's replacement
// names the volume by the driver and handle the rewrite's had.
func TestUndoIsInverseOfRewrite(t *testing.T) {
	var c cli.Common
	tr, err := c.Translator()
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(t *rapid.T) {
		pv := testenv.InTreePV(t, tr)
		var sc *storagev1.StorageClass
		if pv.Spec.StorageClassName != "" && rapid.Bool().Draw(t, "classKnown") {
			sc = &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: pv.Spec.StorageClassName}, Provisioner: "kubernetes.io/rbd",
				Parameters: map[string]string{"monitors": "10.70.53.126:6789", "adminSecretName": "admin", "adminSecretNamespace": "ceph", "pool": "rbd"}}
		}
		before := pv.DeepCopy()
		r, err := rewrite.Rewrite(tr, cli.Klog0(), pv, sc, nil)
		if err != nil {
			// Not an input of this property: a PV the rewrite refuses is never
			// undone (TestUndoIdentityOnServer checks it is left unchanged,
			// and the plan tests which PVs are refused). rapid fails the test
			// when most draws are skipped, so this cannot hide the property.
			t.Skip("the rewrite refuses it:", err)
		}
		if diff := cmp.Diff(before, pv); diff != "" {
			t.Fatalf("replacement changed its argument:\n%s", diff)
		}
		in, err := rewrite.UndoReplacement(tr, r.CSI)
		if err != nil {
			t.Fatalf("undo of the rewrite of %s: %v", pv.Name, err)
		}
		if kind, _ := rewrite.KindOf(tr, in); kind != rewrite.KindInTree {
			t.Fatalf("the undo's replacement is not an in-tree PV csimigrate translates: %+v", in.Spec.PersistentVolumeSource)
		}
		want := pv.DeepCopy()
		if diff := cmp.Diff(testenv.FieldsOf(want), testenv.FieldsOf(undoneAsStored(in))); diff != "" {
			t.Fatalf("rewrite then undo (-original +undone):\n%s", diff)
		}
		d1, h1, err1 := identity(tr, r.CSI)
		d2, h2, err2 := identity(tr, in)
		if err1 != nil || err2 != nil || d1 != d2 || h1 != h2 {
			t.Fatalf("identity: rewrite %s %q (%v), undo %s %q (%v)", d1, h1, err1, d2, h2, err2)
		}
		for k := range in.Annotations {
			if k != rewrite.AnnReclaimPolicy && strings.HasPrefix(k, "csimigrate.io/") && want.Annotations[k] == "" {
				t.Fatalf("the undo leaves the rewrite's annotation %s", k)
			}
		}
	})
}

// identity is the CSI driver and volume handle of a PV: its own for a CSI
// PV, its translation's for an in-tree one.
func identity(tr *translate.Translator, pv *v1.PersistentVolume) (driver, handle string, err error) {
	if pv.Spec.CSI == nil {
		if pv, err = tr.TranslateInTreePVToCSI(cli.Klog0(), pv); err != nil {
			return "", "", err
		}
	}
	if pv.Spec.CSI == nil {
		return "", "", errors.New("no CSI source")
	}
	return pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle, nil
}

package apply

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// SlimPV slims only a PV no direction acts on, keeps of it what the checks
// of other PVs and a controller's scope read (the same volume key, name,
// uid, resourceVersion, labels, claim, class and phase), and never changes
// its input. PVs of every kind: in-tree, their translations (migration
// handles), provisioned CSI PVs of Ceph CSI and vSphere, and hostile ones.
func TestSlimPV(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	slimmed := 0
	rapid.Check(t, func(t *rapid.T) {
		pv := gen.AnyPV(t, func(in *v1.PersistentVolume) (*v1.PersistentVolume, error) {
			return tr.TranslateInTreePVToCSI(klog0(), in)
		})
		before := pv.DeepCopy()
		slim := SlimPV(pv)
		if diff := cmp.Diff(before, pv); diff != "" {
			t.Fatalf("SlimPV changed its input:\n%s", diff)
		}
		if slim == pv {
			return
		}
		slimmed++
		for _, d := range []Direction{Rewrite, Undo, AdoptCSI, UnadoptCSI} {
			if k, _ := d.kindOf(tr, pv); k != kindOther {
				t.Fatalf("slimmed a PV %s acts on (kind %d): %+v", d, k, pv)
			}
		}
		wantKey, wantOK := rewrite.VolumeKey(pv)
		if key, ok := rewrite.VolumeKey(slim); key != wantKey || ok != wantOK {
			t.Fatalf("volume key %q %v, the PV's %q %v", key, ok, wantKey, wantOK)
		}
		if slim.Name != pv.Name || slim.UID != pv.UID || slim.ResourceVersion != pv.ResourceVersion || !cmp.Equal(slim.Labels, pv.Labels) ||
			slim.Spec.StorageClassName != pv.Spec.StorageClassName || slim.Status.Phase != pv.Status.Phase {
			t.Fatalf("slim %+v of %+v", slim, pv)
		}
		if c := pv.Spec.ClaimRef; (c == nil) != (slim.Spec.ClaimRef == nil) || c != nil && (c.Namespace != slim.Spec.ClaimRef.Namespace || c.Name != slim.Spec.ClaimRef.Name || c.UID != slim.Spec.ClaimRef.UID) {
			t.Fatalf("claim %+v, the PV's %+v", slim.Spec.ClaimRef, c)
		}
	})
	if slimmed == 0 {
		t.Fatal("no PV was slimmed: the generators draw none that no direction acts on")
	}
}

package rewrite_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// A PV's volume is the same in every form: an in-tree PV, its translation,
// its rewrite and its undo name one key; two PVs that differ in the volume
// they name (another image, path or disk) do not. Hostile PVs and nil do
// not panic.
func TestVolumeKeyProperty(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	logger := klog.Background().V(100)
	rapid.Check(t, func(rt *rapid.T) {
		if rapid.Bool().Draw(rt, "hostile") {
			pv := gen.HostilePV(rt)
			before := pv.DeepCopy()
			_, _ = rewrite.VolumeKey(pv)
			if pv.String() != before.String() {
				rt.Fatal("VolumeKey modified its argument")
			}
			return
		}
		pv := rapid.OneOf(rapid.Custom(gen.RBDPV), rapid.Custom(gen.VSpherePV),
			rapid.Custom(func(t *rapid.T) *v1.PersistentVolume { return gen.CephFSPV(t, false) })).Draw(rt, "pv")
		key, ok := rewrite.VolumeKey(pv)
		if !ok || key == "" {
			rt.Fatalf("no key for an in-tree PV: %q %v", key, ok)
		}
		csi, err := tr.TranslateInTreePVToCSI(logger, pv)
		if err != nil {
			rt.Skip("not translatable")
		}
		if k, ok := rewrite.VolumeKey(csi); !ok || k != key {
			rt.Fatalf("the translation names %q (%v), the in-tree PV %q", k, ok, key)
		}
		r, err := rewrite.Rewrite(tr, logger, pv, nil, nil)
		if err != nil {
			return
		}
		if k, ok := rewrite.VolumeKey(r.CSI); !ok || k != key {
			rt.Fatalf("the rewrite names %q (%v), the in-tree PV %q", k, ok, key)
		}
		if in, err := rewrite.UndoReplacement(tr, r.CSI); err == nil {
			if k, ok := rewrite.VolumeKey(in); !ok || k != key {
				rt.Fatalf("the undo names %q (%v), the in-tree PV %q", k, ok, key)
			}
		}
		other := pv.DeepCopy()
		switch {
		case other.Spec.RBD != nil:
			other.Spec.RBD.RBDImage += "-other"
		case other.Spec.CephFS != nil:
			other.Spec.CephFS.Path += "/other"
		case other.Spec.VsphereVolume != nil:
			other.Spec.VsphereVolume.VolumePath += ".other"
		}
		if k, _ := rewrite.VolumeKey(other); k == key {
			rt.Fatalf("another volume has the same key %q", key)
		}
	})
	if _, ok := rewrite.VolumeKey(nil); ok {
		t.Error("a key for nil")
	}
}

package rewrite_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/klog/v2"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// What the rewrite and its undo replace, over generated valid and hostile
// objects: no panic, no argument modified; an in-tree PV the rewrite builds
// a replacement for becomes a rewritten PV whose undo is an in-tree PV
// again; an in-tree class's replacement is a rewritten class whose undo
// gives back the class's provisioner, parameters and reclaim policy.
func TestKindsAndReplacementsProperty(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	logger := klog.Background().V(100)
	rapid.Check(t, func(rt *rapid.T) {
		hostile := rapid.Bool().Draw(rt, "hostile")
		var pv *v1.PersistentVolume
		if hostile {
			pv = gen.HostilePV(rt)
		} else {
			pv = rapid.OneOf(rapid.Custom(gen.RBDPV), rapid.Custom(gen.VSpherePV),
				rapid.Custom(func(t *rapid.T) *v1.PersistentVolume { return gen.CephFSPV(t, false) })).Draw(rt, "pv")
		}
		sc := rapid.OneOf(rapid.Custom(gen.RBDStorageClass), rapid.Custom(gen.VSphereStorageClass)).Draw(rt, "sc")
		origPV, origSC := pv.DeepCopy(), sc.DeepCopy()

		kind, why := rewrite.KindOf(tr, pv)
		if (kind == rewrite.KindOther) != (why != "") {
			rt.Fatalf("KindOf = %v with reason %q", kind, why)
		}
		// The round trip holds for valid PVs; of a hostile one the undo may
		// refuse (the writer then leaves the CSI PV as it is).
		if r, err := rewrite.Rewrite(tr, logger, pv, nil, nil); err == nil && kind == rewrite.KindInTree && !hostile {
			if k, _ := rewrite.KindOf(tr, r.CSI); k != rewrite.KindRewritten {
				rt.Fatalf("the rewrite's replacement is %v, not rewritten", k)
			}
			in, err := rewrite.UndoReplacement(tr, r.CSI)
			if err != nil {
				rt.Fatalf("undo of a rewrite: %v", err)
			}
			if k, _ := rewrite.KindOf(tr, in); k != rewrite.KindInTree {
				rt.Fatalf("the undo's replacement is %v, not in-tree", k)
			}
		}
		if _, err := rewrite.UndoReplacement(tr, pv); err == nil && kind != rewrite.KindRewritten {
			rt.Fatalf("undo of a %v PV succeeded", kind)
		}

		if ck := rewrite.ClassKindOf(tr, sc); ck == rewrite.KindInTree {
			out, err := rewrite.ClassReplacement(tr, logger, sc)
			if err == nil {
				if k := rewrite.ClassKindOf(tr, out); k != rewrite.KindRewritten {
					rt.Fatalf("the class replacement is %v", k)
				}
				back, err := rewrite.ClassUndoReplacement(out)
				if err != nil {
					rt.Fatalf("undo of a class replacement: %v", err)
				}
				if diff := cmp.Diff(classOf(sc), classOf(back), cmpopts.EquateEmpty()); diff != "" { // as the API server stores them
					rt.Fatalf("class after replacement and undo (-before +after):\n%s", diff)
				}
			}
		}
		if diff := cmp.Diff(origPV, pv); diff != "" {
			rt.Fatalf("the PV was modified:\n%s", diff)
		}
		if diff := cmp.Diff(origSC, sc); diff != "" {
			rt.Fatalf("the class was modified:\n%s", diff)
		}
	})
	// Nil arguments are errors or KindOther, never panics.
	if k, _ := rewrite.KindOf(nil, nil); k != rewrite.KindOther || rewrite.ClassKindOf(nil, nil) != rewrite.KindOther {
		t.Error("nil is not KindOther")
	}
	if _, err := rewrite.Rewrite(nil, logger, nil, nil, nil); err == nil {
		t.Error("Rewrite(nil) succeeded")
	}
	if _, err := rewrite.UndoReplacement(tr, nil); err == nil {
		t.Error("UndoReplacement(nil) succeeded")
	}
	if _, err := rewrite.ClassReplacement(tr, logger, nil); err == nil {
		t.Error("ClassReplacement(nil) succeeded")
	}
	if _, err := rewrite.ClassUndoReplacement(nil); err == nil {
		t.Error("ClassUndoReplacement(nil) succeeded")
	}
}

// classOf is what a class's undo must give back.
func classOf(sc *storagev1.StorageClass) storagev1.StorageClass {
	return storagev1.StorageClass{Provisioner: sc.Provisioner, Parameters: sc.Parameters, ReclaimPolicy: sc.ReclaimPolicy, MountOptions: sc.MountOptions,
		AllowVolumeExpansion: sc.AllowVolumeExpansion, VolumeBindingMode: sc.VolumeBindingMode, AllowedTopologies: sc.AllowedTopologies}
}

package rewrite_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/rewrite"
)

func TestObjectAndClaimRefusals(t *testing.T) {
	now := metav1.Now()
	bound := func(edit func(pv *v1.PersistentVolume, pvc *v1.PersistentVolumeClaim)) (*v1.PersistentVolume, *v1.PersistentVolumeClaim) {
		pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", Finalizers: []string{rewrite.PVProtection}},
			Spec: v1.PersistentVolumeSpec{ClaimRef: &v1.ObjectReference{Namespace: "ns", Name: "c", UID: "u1"}}}
		pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "u1"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv"}}
		if edit != nil {
			edit(pv, pvc)
		}
		return pv, pvc
	}
	for _, tc := range []struct {
		name string
		edit func(pv *v1.PersistentVolume, pvc *v1.PersistentVolumeClaim)
		gone bool
		want rewrite.Code
	}{
		{"bound", nil, false, ""},
		{"deletion protection", func(pv *v1.PersistentVolume, _ *v1.PersistentVolumeClaim) {
			pv.Finalizers = append(pv.Finalizers, rewrite.DeletionProtection...)
		}, false, ""},
		{"being deleted", func(pv *v1.PersistentVolume, _ *v1.PersistentVolumeClaim) { pv.DeletionTimestamp = &now }, false, rewrite.CodeBeingDeleted},
		{"unknown finalizer", func(pv *v1.PersistentVolume, _ *v1.PersistentVolumeClaim) {
			pv.Finalizers = append(pv.Finalizers, "example.com/backup")
		}, false, rewrite.CodeUnknownFinalizer},
		{"pre-bound", func(pv *v1.PersistentVolume, _ *v1.PersistentVolumeClaim) { pv.Spec.ClaimRef.UID = "" }, false, rewrite.CodePreBound},
		{"claim gone", nil, true, rewrite.CodeClaimGone},
		{"claim replaced", func(_ *v1.PersistentVolume, pvc *v1.PersistentVolumeClaim) { pvc.UID = types.UID("u2") }, false, rewrite.CodeClaimReplaced},
		{"claim being deleted", func(_ *v1.PersistentVolume, pvc *v1.PersistentVolumeClaim) { pvc.DeletionTimestamp = &now }, false, rewrite.CodeClaimBeingDeleted},
		{"bound elsewhere", func(_ *v1.PersistentVolume, pvc *v1.PersistentVolumeClaim) { pvc.Spec.VolumeName = "other" }, false, rewrite.CodeClaimBoundElsewhere},
	} {
		pv, pvc := bound(tc.edit)
		if tc.gone {
			pvc = nil
		}
		err := rewrite.ObjectRefusal(pv)
		if err == nil {
			err = rewrite.ClaimRefusal(pv, pvc)
		}
		if got := rewrite.CodeOf(err); got != tc.want {
			t.Errorf("%s: code %q (%v), want %q", tc.name, got, err, tc.want)
		}
		var r *rewrite.Refusal
		if tc.want != "" && (!errors.As(fmt.Errorf("wrapped: %w", err), &r) || r.Reason == "" || r.Remedy == "") {
			t.Errorf("%s: %v is not a refusal with a reason and a remedy", tc.name, err)
		}
	}
	if rewrite.ObjectRefusal(nil) != nil || rewrite.ClaimRefusal(nil, nil) != nil || rewrite.CodeOf(errors.New("x")) != "" {
		t.Error("nil input")
	}
	if got := rewrite.Refuse(rewrite.CodeInUse, "in use by %d pods", 2).Error(); got != "in use by 2 pods" {
		t.Errorf("Refuse: %q", got)
	}
}

// The refusal rules on valid and hostile PVs: no panic, no modified input.
func TestRefusalsProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		pv := rapid.OneOf(rapid.Custom(gen.RBDPV), rapid.Custom(gen.HostilePV)).Draw(rt, "pv")
		if rapid.Bool().Draw(rt, "finalizers") {
			pv.Finalizers = rapid.SliceOf(gen.HostileString()).Draw(rt, "finalizers")
		}
		before := pv.DeepCopy()
		_ = rewrite.ObjectRefusal(pv)
		_ = rewrite.ClaimRefusal(pv, nil)
		if diff := cmp.Diff(before, pv); diff != "" {
			rt.Fatalf("input modified:\n%s", diff)
		}
	})
}

// An object refused for several reasons names each, with its code, in the
// order the checks found them; the arguments are left as they were.
func TestJoinRefusals(t *testing.T) {
	entry := &rewrite.Refusal{Code: rewrite.CodeCephEntryMissing, Reason: "no entry", Remedy: "add it"}
	secret := &rewrite.Refusal{Code: rewrite.CodeSecretMissing, Reason: "no secret"}
	driver := &rewrite.Refusal{Code: rewrite.CodeCSIDriverMissing, Reason: "no driver", Also: []*rewrite.Refusal{secret}}
	for _, tc := range []struct {
		name  string
		in    []*rewrite.Refusal
		codes []rewrite.Code
		text  string
	}{
		{"none", nil, nil, ""},
		{"only nils", []*rewrite.Refusal{nil, nil}, nil, ""},
		{"one", []*rewrite.Refusal{nil, entry}, []rewrite.Code{rewrite.CodeCephEntryMissing}, "no entry; add it"},
		{"two", []*rewrite.Refusal{entry, secret}, []rewrite.Code{rewrite.CodeCephEntryMissing, rewrite.CodeSecretMissing}, "no entry; add it; also (SecretMissing): no secret"},
		{"nested", []*rewrite.Refusal{driver, entry}, []rewrite.Code{rewrite.CodeCSIDriverMissing, rewrite.CodeSecretMissing, rewrite.CodeCephEntryMissing},
			"no driver; also (SecretMissing): no secret; also (CephEntryMissing): no entry; add it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rewrite.JoinRefusals(tc.in...)
			if tc.codes == nil {
				if got != nil {
					t.Fatalf("JoinRefusals = %v, want nil", got)
				}
				return
			}
			if diff := cmp.Diff(tc.codes, got.Codes()); diff != "" {
				t.Errorf("codes (-want +got):\n%s", diff)
			}
			if got.Error() != tc.text {
				t.Errorf("Error() = %q, want %q", got.Error(), tc.text)
			}
			var r *rewrite.Refusal
			if !errors.As(fmt.Errorf("wrapped: %w", got), &r) || r.Code != tc.codes[0] {
				t.Errorf("errors.As finds %v, want code %s", r, tc.codes[0])
			}
		})
	}
	if len(entry.Also) != 0 || len(driver.Also) != 1 {
		t.Errorf("an argument was modified: %+v %+v", entry, driver)
	}
}

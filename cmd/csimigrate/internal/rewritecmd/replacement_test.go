package rewritecmd

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/input"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// The rewrite keeps each PV's name, claim and capacity, and sets Retain
// until the last step.
func TestRewriteKeepsClaim(t *testing.T) {
	inv := &input.Inventory{}
	if err := (&input.Reader{Sink: inv}).ReadStream("sample", bytes.NewReader(input.Sample)); err != nil {
		t.Fatal(err)
	}
	var c cli.Common
	tr, err := c.Translator()
	if err != nil {
		t.Fatal(err)
	}
	rp, _ := buildRewrite(inv, tr)
	byName := map[string]*v1.PersistentVolume{}
	for _, pv := range inv.PVs {
		byName[pv.Name] = pv
	}
	if len(rp.PVs) != 4 {
		t.Fatalf("%d PVs to rewrite, want 4 (scratch-fs is blocked)", len(rp.PVs))
	}
	for _, p := range rp.PVs {
		old := byName[p.Name]
		if p.CSI.Name != old.Name || !cmp.Equal(p.CSI.Spec.Capacity, old.Spec.Capacity) || !cmp.Equal(p.CSI.Spec.ClaimRef, old.Spec.ClaimRef) {
			t.Errorf("%s: name/capacity/claim changed", p.Name)
		}
		if p.CSI.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain || p.CSI.Annotations[rewrite.AnnReclaimPolicy] != string(p.RestorePolicy) {
			t.Errorf("%s: policy %s, annotation %q", p.Name, p.CSI.Spec.PersistentVolumeReclaimPolicy, p.CSI.Annotations[rewrite.AnnReclaimPolicy])
		}
	}
	for _, p := range rp.PVs {
		if p.Name == "legacy-reports" && p.RestorePolicy != v1.PersistentVolumeReclaimRetain {
			t.Errorf("an image Ceph CSI cannot delete correctly gets policy %s back", p.RestorePolicy)
		}
	}
}

// RewritePlan is the list of PVs to replace.
type RewritePlan struct {
	PVs []rewrite.PV
}

// buildRewrite prepares the replacement of every migratable in-tree PV of
// an inventory.
func buildRewrite(inv *input.Inventory, tr *translate.Translator) (*RewritePlan, []error) {
	in := &rewriteInputs{classes: map[string]*storagev1.StorageClass{}, claims: map[types.NamespacedName]*v1.PersistentVolumeClaim{}}
	for _, sc := range inv.StorageClasses {
		in.addClass(sc)
	}
	for _, pvc := range inv.PVCs {
		in.addClaim(pvc)
	}
	var rp RewritePlan
	var errs []error
	for _, pv := range inv.PVs {
		if plugin.InTreeNameOfPV(pv) == "" || !tr.IsPVMigratable(pv) {
			continue
		}
		r, err := in.replacement(tr, pv)
		if err != nil {
			errs = append(errs, fmt.Errorf("PersistentVolume %s: %w", pv.Name, err))
			continue
		}
		rp.PVs = append(rp.PVs, r)
	}
	return &rp, errs
}

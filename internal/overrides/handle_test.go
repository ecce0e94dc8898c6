package overrides

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/internal/annot"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/secrets"
)

// A recorded handle other than the stock one moves to
// plugin.AnnOriginalVolumeHandle, and a reverse translation records it again, so
// in-tree -> CSI -> in-tree stays the identity.
func TestKeepStockHandle(t *testing.T) {
	inTree := &v1.PersistentVolume{}
	annot.Set(inTree, plugin.AnnCSIOverrides, `{"volumeHandle":"fcd-id"}`)
	out := basePV()
	out.Annotations = map[string]string{plugin.AnnCSIOverrides: inTree.Annotations[plugin.AnnCSIOverrides]}
	if err := Apply(out); err != nil {
		t.Fatal(err)
	}
	if out.Spec.CSI.VolumeHandle != "fcd-id" {
		t.Fatalf("overrides not applied: %q", out.Spec.CSI.VolumeHandle)
	}
	KeepStockHandle(out, "h")
	if out.Spec.CSI.VolumeHandle != "h" || out.Annotations[plugin.AnnOriginalVolumeHandle] != "fcd-id" {
		t.Fatalf("handle %q, annotations %v", out.Spec.CSI.VolumeHandle, out.Annotations)
	}

	// Reverse: forward would set "h", which the CSI PV has; the annotation's
	// handle is recorded.
	back := out.DeepCopy()
	back.Spec.CSI = nil
	f := Forwarded{VolumeHandle: "h", Attributes: []Attribute{{"a", "1"}, {"nodeStage", "2"}},
		AccessModes: out.Spec.AccessModes}
	f = f.WithRef(secrets.NodeStage, out.Spec.CSI.NodeStageSecretRef)
	if err := Record(back, out, &f); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(inTree.Annotations, back.Annotations); diff != "" {
		t.Errorf("annotations of the reverse translation (-want +got):\n%s", diff)
	}

	// A CSI handle edited away from the stock one wins over the annotation.
	edited := out.DeepCopy()
	edited.Spec.CSI.VolumeHandle = "other"
	back = edited.DeepCopy()
	back.Spec.CSI = nil
	if err := Record(back, edited, &f); err != nil {
		t.Fatal(err)
	}
	if got, want := back.Annotations[plugin.AnnCSIOverrides], `{"volumeHandle":"other"}`; got != want {
		t.Errorf("overrides %s, want %s", got, want)
	}
	if _, ok := back.Annotations[plugin.AnnOriginalVolumeHandle]; ok {
		t.Error("the annotation is left on the in-tree PV")
	}

	// The stock handle: nothing changes.
	same := basePV()
	KeepStockHandle(same, "h")
	if diff := cmp.Diff(basePV(), same); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

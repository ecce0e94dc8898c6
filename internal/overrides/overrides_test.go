package overrides

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/plugins"
)

// basePV is a PV a forward translation produced, for applying overrides to.
func basePV() *v1.PersistentVolume {
	ref := &v1.SecretReference{Name: "s", Namespace: "ns"}
	return &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{
		AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
			Driver: "d", VolumeHandle: "h", VolumeAttributes: map[string]string{"a": "1", "nodeStage": "2"},
			NodeStageSecretRef: ref,
		}},
	}}
}

// What appendOverrides writes, with or without damage, is read back with
// the meaning of the overrides it was written from; damage is an error that
// names the annotation, and nothing is applied before it.
func TestAppliedAsWritten(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o := drawOverrides(t)
		raw := string(appendOverrides(nil, o.sorted()))
		mutated := false
		if rapid.Bool().Draw(t, "mutate") && raw != "" {
			// An edit by hand, or damage: replace, insert or delete a byte.
			i := rapid.IntRange(0, len(raw)-1).Draw(t, "at")
			c := rapid.SampledFrom([]string{" ", "\\", `"`, ",", ":", "{", "}", "[", "]", "n", "0", "\xff", ""}).Draw(t, "byte")
			switch rapid.IntRange(0, 2).Draw(t, "edit") {
			case 0:
				raw = raw[:i] + c + raw[i+1:]
			case 1:
				raw = raw[:i] + c + raw[i:]
			default:
				raw = raw[:i] + raw[i+1:]
			}
			mutated = true
		}
		got := basePV()
		got.Annotations = map[string]string{plugins.AnnCSIOverrides: raw}
		errGot := Apply(got)
		var slow csiOverrides
		if jerr := json.Unmarshal([]byte(raw), &slow); jerr != nil {
			if errGot == nil || !strings.Contains(errGot.Error(), plugins.AnnCSIOverrides) {
				t.Fatalf("%s: encoding/json refuses it (%v), Apply: %v", raw, jerr, errGot)
			}
			return
		}
		want := basePV()
		if mutated {
			o = slow
		}
		errWant := o.apply(want, nil, false)
		if (errGot == nil) != (errWant == nil) {
			t.Fatalf("errors differ for %s: %v, %v", raw, errGot, errWant)
		}
		if errGot != nil {
			return
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s (-written +read):\n%s", raw, diff)
		}
	})
}

// Record writes the attributes it records in encoding/json's
// order (sorted keys), few or many.
func TestRecordSortsAttributes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		extra := rapid.MapOfN(rapid.String(), rapid.String(), 0, 40).Draw(t, "attrs")
		csiPV := basePV()
		for k, v := range extra {
			csiPV.Spec.CSI.VolumeAttributes[k] = v
		}
		inTree := &v1.PersistentVolume{}
		f := &Forwarded{VolumeHandle: "h", NodeStage: csiPV.Spec.CSI.NodeStageSecretRef,
			AccessModes: csiPV.Spec.AccessModes, Attributes: []Attribute{{"a", "1"}, {"gone", "x"}}}
		if err := Record(inTree, csiPV, f); err != nil {
			t.Fatal(err)
		}
		want := csiOverrides{VolumeAttributes: map[string]*string{"gone": nil}}
		for k, v := range csiPV.Spec.CSI.VolumeAttributes {
			if k != "a" || v != "1" {
				want.VolumeAttributes[k] = &v
			}
		}
		b, err := json.Marshal(&want)
		if err != nil {
			t.Fatal(err)
		}
		if got := inTree.Annotations[plugins.AnnCSIOverrides]; got != string(b) {
			t.Fatalf("got  %s\nwant %s", got, b)
		}
	})
}

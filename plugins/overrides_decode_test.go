package plugins

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"
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

// The direct reader means what encoding/json reads wherever it accepts the
// input, accepts every value appendOverrides writes without escapes (within
// its capacity), and what it refuses goes to encoding/json.
func TestDecodeOverridesMatchesEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o := drawOverrides(t)
		w := o.sorted()
		raw := string(appendOverrides(nil, w))
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
		var buf overridesBuf
		fast, ok := decodeOverrides(raw, &buf)
		if !mutated && !ok && !strings.Contains(raw, `\`) && len(w.attrs) <= len(buf.attrs) {
			t.Fatalf("direct reader refused %s", raw)
		}
		if !ok {
			return
		}
		var slow csiOverrides
		if err := json.Unmarshal([]byte(raw), &slow); err != nil {
			t.Fatalf("direct reader accepted %s, which encoding/json rejects: %v", raw, err)
		}
		got, want := basePV(), basePV()
		errGot := applyOverrides(got, &fast, nil, false)
		errWant := applyOverrides(want, slow.sorted(), nil, false)
		if (errGot == nil) != (errWant == nil) {
			t.Fatalf("errors differ for %s: %v, %v", raw, errGot, errWant)
		}
		if diff := cmp.Diff(basePV(), got); errGot != nil && diff != "" {
			t.Fatalf("%s: applied in part before the error %v:\n%s", raw, errGot, diff)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s (-encoding/json +direct):\n%s", raw, diff)
		}
		// The same with the attributes given as a list (FinishForward).
		got, want = basePV(), basePV()
		base := []Attribute{{"a", "1"}, {"b", "2"}}
		errGot = applyOverrides(got, &fast, base, true)
		want.Spec.CSI.VolumeAttributes = AttributeMap(base)
		errWant = applyOverrides(want, slow.sorted(), nil, false)
		if (errGot == nil) != (errWant == nil) {
			t.Fatalf("errors differ for %s with a base: %v, %v", raw, errGot, errWant)
		}
		if diff := cmp.Diff(want, got); errGot == nil && diff != "" {
			t.Fatalf("%s with a base (-map +list):\n%s", raw, diff)
		}
	})
}

// FinishReverseFrom writes the attributes it records in encoding/json's
// order (sorted keys), few or many.
func TestFinishReverseFromSortsAttributes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		extra := rapid.MapOfN(rapid.String(), rapid.String(), 0, 40).Draw(t, "attrs")
		csiPV := basePV()
		for k, v := range extra {
			csiPV.Spec.CSI.VolumeAttributes[k] = v
		}
		inTree := &v1.PersistentVolume{}
		f := &Forwarded{VolumeHandle: "h", NodeStage: csiPV.Spec.CSI.NodeStageSecretRef,
			AccessModes: csiPV.Spec.AccessModes, Attributes: []Attribute{{"a", "1"}, {"gone", "x"}}}
		if err := FinishReverseFrom(inTree, csiPV, f); err != nil {
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
		if got := inTree.Annotations[AnnCSIOverrides]; got != string(b) {
			t.Fatalf("got  %s\nwant %s", got, b)
		}
	})
}

package overrides

import (
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/secrets"
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
		got.Annotations = map[string]string{plugin.AnnCSIOverrides: raw}
		errGot := Apply(got)
		var slow csiOverrides
		if jerr := json.Unmarshal([]byte(raw), &slow); jerr != nil {
			if errGot == nil || !strings.Contains(errGot.Error(), plugin.AnnCSIOverrides) {
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
		f := &Forwarded{VolumeHandle: "h",
			AccessModes: csiPV.Spec.AccessModes, Attributes: []Attribute{{"a", "1"}, {"gone", "x"}}}
		*f = f.WithRef(secrets.NodeStage, csiPV.Spec.CSI.NodeStageSecretRef)
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
		if got := inTree.Annotations[plugin.AnnCSIOverrides]; got != string(b) {
			t.Fatalf("got  %s\nwant %s", got, b)
		}
	})
}

// apply is the reference: it applies o, as encoding/json decoded it (each key once, nothing
// shared), to out's CSI source and access modes. The attributes it starts
// from are base when withBase, else the source's map. A reference to a slot
// the CSI source does not have is an error that names the first such slot
// in the order of their names, before anything changes.
func (o *csiOverrides) apply(out *v1.PersistentVolume, base []Attribute, withBase bool) error {
	c := out.Spec.CSI
	bad, hasBad := "", false
	for slot := range o.SecretRefs {
		if refSlot(c, slot) == nil && (!hasBad || slot < bad) {
			bad, hasBad = slot, true
		}
	}
	if hasBad {
		return plugin.Invalid("PersistentVolume", out.Name, field.NotSupported(
			field.NewPath("metadata", "annotations").Key(plugin.AnnCSIOverrides).Child("secretRefs"), bad,
			[]string{"controllerExpand", "controllerPublish", "nodeExpand", "nodePublish", "nodeStage"}))
	}
	if o.VolumeHandle != nil {
		c.VolumeHandle = *o.VolumeHandle
	}
	if o.ReadOnly != nil {
		c.ReadOnly = *o.ReadOnly
	}
	if o.FSType != nil {
		c.FSType = *o.FSType
	}
	switch {
	case len(o.VolumeAttributes) > 0:
		// The reference: the attributes as a new map, the recorded ones set
		// or removed (no sizing: it changes no result).
		attrs := maps.Clone(c.VolumeAttributes)
		if withBase {
			attrs = AttributeMap(base)
		}
		if attrs == nil {
			attrs = map[string]string{}
		}
		for k, v := range o.VolumeAttributes {
			if v == nil {
				delete(attrs, k)
			} else {
				attrs[k] = *v
			}
		}
		if len(attrs) == 0 {
			attrs = nil
		}
		c.VolumeAttributes = attrs
	case withBase:
		c.VolumeAttributes = AttributeMap(base)
	}
	for slot, ref := range o.SecretRefs {
		*refSlot(c, slot) = ref
	}
	if o.AccessModes != nil {
		out.Spec.AccessModes = nil
		if len(*o.AccessModes) > 0 {
			out.Spec.AccessModes = *o.AccessModes
		}
	}
	return nil
}

// Forwarded holds a reference for every kind secrets knows.
func TestKindIndex(t *testing.T) {
	if numKinds != len(secrets.Kinds) {
		t.Fatalf("numKinds %d, secrets.Kinds %d", numKinds, len(secrets.Kinds))
	}
	for i, k := range secrets.Kinds {
		ref := &v1.SecretReference{Name: string(k)}
		f := Forwarded{}.WithRef(k, ref)
		if kindIndex(k) != i || f.Ref(k) != ref {
			t.Errorf("%s: index %d, ref %v", k, kindIndex(k), f.Ref(k))
		}
	}
}

// Read gives the recorded attributes by key (a removed one is none), holds
// more than its arrays do, forgets what it read before, and refuses a
// damaged annotation naming it; Forward applies what was read.
func TestRecordedRead(t *testing.T) {
	pvWith := func(raw string) *v1.PersistentVolume {
		pv := basePV()
		pv.Annotations = map[string]string{plugin.AnnCSIOverrides: raw}
		return pv
	}
	var many strings.Builder
	many.WriteString(`{"volumeAttributes":{`)
	for i := range 20 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`"k` + string(rune('a'+i)) + `":"v` + string(rune('a'+i)) + `"`)
	}
	many.WriteString(`}}`)

	var r Recorded
	if err := r.Read(pvWith(`{"volumeAttributes":{"a":null,"b":"2","c":""}}`)); err != nil || !r.Present() {
		t.Fatalf("Read: %v, present %v", err, r.Present())
	}
	for key, want := range map[string]struct {
		v  string
		ok bool
	}{"a": {"", false}, "b": {"2", true}, "c": {"", true}, "d": {"", false}} {
		if v, ok := r.Attribute(key); v != want.v || ok != want.ok {
			t.Errorf("Attribute(%q) = %q, %v; want %q, %v", key, v, ok, want.v, want.ok)
		}
	}
	if err := r.Read(basePV()); err != nil || r.Present() {
		t.Fatalf("Read of a PV without the annotation: %v, present %v", err, r.Present())
	}
	if v, ok := r.Attribute("b"); ok {
		t.Errorf("Attribute(b) = %q after reading a PV without the annotation", v)
	}

	in := pvWith(many.String())
	if err := r.Read(in); err != nil {
		t.Fatal(err)
	}
	if v, ok := r.Attribute("kt"); v != "vt" || !ok {
		t.Errorf("Attribute(kt) = %q, %v; want the twentieth attribute", v, ok)
	}
	out := in.DeepCopy()
	delete(out.Annotations, plugin.AnnCSIOverrides)
	if err := r.Forward(out, []Attribute{{Key: "base", Value: "1"}}); err != nil {
		t.Fatal(err)
	}
	if n := len(out.Spec.CSI.VolumeAttributes); n != 21 {
		t.Errorf("Forward: %d attributes, want 21", n)
	}

	err := r.Read(pvWith(`{"volumeAttributes":`))
	var fe *field.Error
	if err == nil || !errors.As(err, &fe) || fe.Field != "metadata.annotations["+plugin.AnnCSIOverrides+"]" || r.Present() {
		t.Errorf("Read of a damaged annotation: %v (present %v)", err, r.Present())
	}
}

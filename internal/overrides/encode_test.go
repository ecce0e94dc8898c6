package overrides

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"

	"pgregory.net/rapid"
)

// appendJSONString writes what encoding/json writes, for any string
// (including invalid UTF-8, control and HTML characters, U+2028/U+2029),
// but for how an invalid byte's replacement is spelled: the escape
// \ufffd, as Go 1.26 writes it, where Go 1.27's encoder writes U+FFFD
// itself (both decode to the same string).
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	chars := rapid.OneOf(rapid.String(), rapid.StringOf(rapid.SampledFrom([]rune{'"', '\\', '<', '>', '&', '\b', '\f', '\n', '\r', '\t', 0, 0x1f, 0x7f, '\u2028', '\u2029', 'a', ','})),
		rapid.Custom(func(t *rapid.T) string { return string(rapid.SliceOf(rapid.Byte()).Draw(t, "bytes")) }))
	rapid.Check(t, func(t *rapid.T) {
		s := chars.Draw(t, "s")
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got := appendJSONString(nil, s)
		if spell := strings.NewReplacer("\uFFFD", `\ufffd`); spell.Replace(string(got)) != spell.Replace(string(want)) {
			t.Fatalf("got %q, want %q", got, want)
		}
		if !utf8.ValidString(s) && strings.ContainsRune(string(got), utf8.RuneError) && !strings.ContainsRune(s, utf8.RuneError) {
			t.Fatalf("got %q: an invalid byte written as U+FFFD itself, want the escape \\ufffd", got)
		}
	})
}

// overrideStrings draws strings for overrides: any, and ones the JSON
// encoder escapes.
var overrideStrings = rapid.OneOf(rapid.String(), rapid.SampledFrom([]string{"", "a", "<b>", "\u2028", `"`, `\`, "nodeStage"}))

// drawOverrides draws an overrides value, including references to a slot
// that does not exist ("x").
func drawOverrides(t *rapid.T) csiOverrides {
	str := overrideStrings
	optStr := rapid.Custom(func(t *rapid.T) *string {
		if rapid.Bool().Draw(t, "nil") {
			return nil
		}
		s := str.Draw(t, "s")
		return &s
	})
	var o csiOverrides
	o.VolumeHandle = optStr.Draw(t, "handle")
	o.FSType = optStr.Draw(t, "fsType")
	if rapid.Bool().Draw(t, "hasReadOnly") {
		b := rapid.Bool().Draw(t, "readOnly")
		o.ReadOnly = &b
	}
	if rapid.Bool().Draw(t, "hasAttrs") {
		o.VolumeAttributes = rapid.MapOf(str, optStr).Draw(t, "attrs")
	}
	if rapid.Bool().Draw(t, "hasRefs") {
		o.SecretRefs = rapid.MapOf(rapid.SampledFrom([]string{"nodeStage", "nodeExpand", "controllerExpand", "x"}), rapid.Custom(func(t *rapid.T) *v1.SecretReference {
			if rapid.Bool().Draw(t, "nilRef") {
				return nil
			}
			return &v1.SecretReference{Name: str.Draw(t, "name"), Namespace: str.Draw(t, "ns")}
		})).Draw(t, "refs")
	}
	// A reverse translation records no modes as [], never null.
	switch rapid.IntRange(0, 2).Draw(t, "modes") {
	case 1:
		m := []v1.PersistentVolumeAccessMode{}
		o.AccessModes = &m
	case 2:
		m := []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce, v1.PersistentVolumeAccessMode(str.Draw(t, "mode"))}
		o.AccessModes = &m
	}
	return o
}

// sorted returns o in the form Record writes, its attributes and references
// sorted.
func (o *csiOverrides) sorted() *overrides {
	w := &overrides{}
	if o.VolumeHandle != nil {
		w.volumeHandle, w.hasVolumeHandle = *o.VolumeHandle, true
	}
	if o.ReadOnly != nil {
		w.readOnly, w.hasReadOnly = *o.ReadOnly, true
	}
	if o.FSType != nil {
		w.fsType, w.hasFSType = *o.FSType, true
	}
	for _, k := range slices.Sorted(maps.Keys(o.VolumeAttributes)) {
		if v := o.VolumeAttributes[k]; v == nil {
			w.attrs = append(w.attrs, attrOverride{key: k, remove: true})
		} else {
			w.attrs = append(w.attrs, attrOverride{key: k, value: *v})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(o.SecretRefs)) {
		w.refs = append(w.refs, refOverrideOf(k, o.SecretRefs[k]))
	}
	if o.AccessModes != nil {
		w.accessModes, w.modes = true, *o.AccessModes
	}
	return w
}

// appendOverrides writes what encoding/json writes for every overrides value.
func TestAppendOverridesMatchesEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o := drawOverrides(t)
		want, err := json.Marshal(&o)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendOverrides(nil, o.sorted()); string(got) != string(want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}

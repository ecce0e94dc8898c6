package overrides

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

// readBy is what one reader made of an annotation.
type readBy struct {
	Scalars scalars
	Attrs   []attrOverride
	Refs    []refOverride
}

var cmpReads = cmp.AllowUnexported(readBy{}, scalars{}, attrOverride{}, refOverride{})

// writtenSeeds are annotations as reverse translations write them, and
// near misses that must go through encoding/json.
var writtenSeeds = []string{
	`{}`,
	`{"volumeHandle":"3c2b1a09-8f7e-4d6c-a5b4-c3d2e1f0a9b8","volumeAttributes":{"initialvolumefilepath":"[vsanDatastore] fcd/3c2b.vmdk","storage.kubernetes.io/csiProvisionerIdentity":"1709287200000-8081-csi.vsphere.vmware.com","type":"vSphere CNS Block Volume"}}`,
	`{"volumeHandle":"h","readOnly":true,"fsType":"xfs","volumeAttributes":{"a":"1","gone":null},"secretRefs":{"controllerExpand":{},"nodeExpand":{"name":"n","namespace":"ns"},"nodePublish":{"namespace":"only"},"nodeStage":null},"accessModes":["ReadWriteOnce","ReadOnlyMany"]}`,
	`{"readOnly":false,"accessModes":[]}`,
	`{"secretRefs":{"nodeStage":{"name":"only"}}}`,
	`{"volumeAttributes":{"ünïcode":"välue ✓"}}`,
	// Not the written form: white space, escapes, duplicate or unsorted
	// keys, members out of order, null, unknown members, bad slots.
	`{ "volumeHandle" : "h" }`,
	`{"volumeHandle":"a\u0041"}`,
	`{"volumeAttributes":{"b":"1","a":"2"}}`,
	`{"volumeAttributes":{"a":"1","a":"2"}}`,
	`{"fsType":"x","volumeHandle":"h"}`,
	`{"volumeHandle":"h","volumeHandle":"i"}`,
	`{"accessModes":null}`,
	`{"volumeAttributes":null}`,
	`{"secretRefs":{"nodeStage":{"namespace":"b","name":"a"}}}`,
	`{"secretRefs":{"bogus":{"name":"x"}}}`,
	`{"other":1}`,
	`{"volumeHandle":"h"} `,
	`{"volumeHandle":"h"}x`,
	"{\"volumeHandle\":\"\xff\"}",
	`{"readOnly":"true"}`,
	`[]`,
	``,
}

// The written form takes the direct path.
func TestDecodeWrittenForm(t *testing.T) {
	for _, raw := range writtenSeeds[:6] {
		var sc scalars
		if _, _, ok := decodeWritten(raw, &sc, nil, nil); !ok {
			t.Errorf("the written form %s is not read directly", raw)
		}
	}
}

// decode means what encoding/json reads, whichever path it takes: the same
// error or the same overrides.
func FuzzDecode(f *testing.F) {
	for _, s := range writtenSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var got readBy
		var attrBuf [2]attrOverride
		attrs, refs, err := decode(raw, &got.Scalars, attrBuf[:0], nil)
		got.Attrs, got.Refs = attrs, refs
		var j csiOverrides
		jerr := json.Unmarshal([]byte(raw), &j)
		if (err == nil) != (jerr == nil) {
			t.Fatalf("%q: decode %v, encoding/json %v", raw, err, jerr)
		}
		if err != nil {
			return
		}
		var want readBy
		want.Attrs, want.Refs = j.flatten(&want.Scalars, nil, nil)
		if len(want.Attrs) == 0 && len(got.Attrs) == 0 {
			want.Attrs, got.Attrs = nil, nil
		}
		if diff := cmp.Diff(want, got, cmpReads); diff != "" {
			t.Fatalf("%q (-encoding/json +decode):\n%s", raw, diff)
		}
	})
}

// What the writer writes, the direct path reads back.
func TestDecodeWhatIsWritten(t *testing.T) {
	o := &overrides{scalars: scalars{volumeHandle: "h", hasVolumeHandle: true, readOnly: true, hasReadOnly: true, accessModes: true,
		modes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}},
		attrs: []attrOverride{{key: "a", value: "[ds] x/y.vmdk"}, {key: "b", remove: true}},
		refs:  []refOverride{{slot: "nodeExpand", ref: v1.SecretReference{Name: "n", Namespace: "ns"}}, {slot: "nodeStage", remove: true}}}
	raw := string(appendOverrides(nil, o))
	var got readBy
	attrs, refs, ok := decodeWritten(raw, &got.Scalars, nil, nil)
	if !ok {
		t.Fatalf("%s is not read directly", raw)
	}
	got.Attrs, got.Refs = attrs, refs
	if diff := cmp.Diff(readBy{Scalars: o.scalars, Attrs: o.attrs, Refs: o.refs}, got, cmpReads); diff != "" {
		t.Fatalf("%s (-written +read):\n%s", raw, diff)
	}
}

// Every byte at every offset of a string read eight bytes at a time: the
// direct path refuses or reads it as encoding/json does.
func TestDecodeEveryByte(t *testing.T) {
	for pos := range 17 {
		for b := range 256 {
			s := []byte("abcdefghijklmnopq")
			s[pos] = byte(b)
			raw := `{"volumeHandle":"` + string(s) + `"}`
			var sc scalars
			_, _, err := decode(raw, &sc, nil, nil)
			var j csiOverrides
			jerr := json.Unmarshal([]byte(raw), &j)
			if (err == nil) != (jerr == nil) || (err == nil && sc.volumeHandle != *j.VolumeHandle) {
				t.Fatalf("byte %#x at %d: decode %q %v, encoding/json %v", b, pos, sc.volumeHandle, err, jerr)
			}
		}
	}
}

package pvcopy_test

import (
	"bytes"
	"testing"

	v1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/internal/pvcopy"
)

// In the byte form of FieldsV1, the copied field sets share one
// allocation; each is its own part of it: appending to one, or writing into
// it, changes no other and not the input. (In the string form, a field set
// cannot be written into; the copies equal the input, as every test of Into
// checks.)
func TestFieldSetsApart(t *testing.T) {
	if !pvcopy.ByteForm {
		t.Log("FieldsV1 is the string form in this build: its field sets are immutable")
		return
	}
	rapid.Check(t, func(t *rapid.T) {
		pv := &v1.PersistentVolume{}
		pv.ManagedFields = managedFields(t)
		got := pvcopy.Into(new(pvcopy.Buffer), pv, 0)
		var before [][]byte
		for _, e := range got.ManagedFields {
			if e.FieldsV1 != nil {
				before = append(before, bytes.Clone(pvcopy.FieldBytes(e.FieldsV1)))
			}
		}
		orig := pv.DeepCopy()
		// Last to first, so that an append into the next one's bytes would
		// overwrite what was written there.
		for i := len(got.ManagedFields) - 1; i >= 0; i-- {
			e := got.ManagedFields[i]
			if e.FieldsV1 == nil || len(pvcopy.FieldBytes(e.FieldsV1)) == 0 {
				continue
			}
			raw := pvcopy.FieldBytes(e.FieldsV1)
			raw[0] = '#'
			pvcopy.SetFieldBytes(e.FieldsV1, append(raw, '!'))
		}
		n := 0
		for i, e := range got.ManagedFields {
			if e.FieldsV1 == nil {
				continue
			}
			want := before[n]
			n++
			if len(want) > 0 {
				want = append(append([]byte{'#'}, want[1:]...), '!')
			}
			if !bytes.Equal(pvcopy.FieldBytes(e.FieldsV1), want) {
				t.Fatalf("managedFields[%d].fieldsV1 = %q after writing into every copy, want %q", i, pvcopy.FieldBytes(e.FieldsV1), want)
			}
		}
		for i := range pv.ManagedFields {
			if a, b := pv.ManagedFields[i].FieldsV1, orig.ManagedFields[i].FieldsV1; (a == nil) != (b == nil) || (a != nil && !bytes.Equal(pvcopy.FieldBytes(a), pvcopy.FieldBytes(b))) {
				t.Fatalf("input managedFields[%d] changed by writing into the copy", i)
			}
		}
	})
}

//go:build !fieldsv1string

package pvcopy_test

import (
	"bytes"
	"testing"

	v1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/internal/pvcopy"
)

// The copied field sets share one allocation; each is its own part of it:
// appending to one, or writing into it, changes no other and not the input.
//
//lint:file-ignore SA1019 the byte form of FieldsV1 is what this file tests.
func TestFieldSetsApart(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pv := &v1.PersistentVolume{}
		pv.ManagedFields = managedFields(t)
		got := pvcopy.Into(new(pvcopy.Buffer), pv, 0)
		var before [][]byte
		for _, e := range got.ManagedFields {
			if e.FieldsV1 != nil {
				before = append(before, bytes.Clone(e.FieldsV1.Raw))
			}
		}
		orig := pv.DeepCopy()
		// Last to first, so that an append into the next one's bytes would
		// overwrite what was written there.
		for i := len(got.ManagedFields) - 1; i >= 0; i-- {
			e := got.ManagedFields[i]
			if e.FieldsV1 == nil || len(e.FieldsV1.Raw) == 0 {
				continue
			}
			e.FieldsV1.Raw[0] = '#'
			e.FieldsV1.Raw = append(e.FieldsV1.Raw, '!')
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
			if !bytes.Equal(e.FieldsV1.Raw, want) {
				t.Fatalf("managedFields[%d].fieldsV1 = %q after writing into every copy, want %q", i, e.FieldsV1.Raw, want)
			}
		}
		for i := range pv.ManagedFields {
			if a, b := pv.ManagedFields[i].FieldsV1, orig.ManagedFields[i].FieldsV1; (a == nil) != (b == nil) || (a != nil && !bytes.Equal(a.Raw, b.Raw)) {
				t.Fatalf("input managedFields[%d] changed by writing into the copy", i)
			}
		}
	})
}

//go:build !fieldsv1string

package pvcopy

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// copyFieldSets copies the field set of each entry of in that has one into
// parts (the same length), as FieldsV1.DeepCopyInto does, but with the bytes
// of all of them in one allocation, each its own part of it (capacity
// limited, so that appending to one never writes into another). This file
// is for the byte-slice form of FieldsV1, apimachinery's default;
// fields_string.go is for the string form its fieldsv1string build tag
// selects.
//
//lint:file-ignore SA1019 Raw is read and written directly so that the copies share one allocation: the tag-selected file for the string form does without it.
func copyFieldSets(in []metav1.ManagedFieldsEntry, parts []managedFieldsParts) {
	size := 0
	for i := range parts {
		if f := in[i].FieldsV1; f != nil {
			size += len(f.Raw)
		}
	}
	var raw []byte
	if size > 0 {
		raw = make([]byte, 0, size)
	}
	for i := range parts {
		f := in[i].FieldsV1
		switch {
		case f == nil, f.Raw == nil:
			// No field set, or one without bytes: DeepCopyInto keeps nil.
		case len(f.Raw) == 0:
			parts[i].fields.Raw = []byte{}
		default:
			start := len(raw)
			raw = append(raw, f.Raw...)
			parts[i].fields.Raw = raw[start:len(raw):len(raw)]
		}
	}
}

package pvcopy

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// byteForm is whether FieldsV1 is the byte-slice form, one field Raw
// []byte: apimachinery's only form up to 1.35, its default in 1.36 and
// 1.37 (the fieldsv1string tag selects a string form), and 1.38's with its
// fieldsv1byte tag (1.38's default is the string form, without Raw). It is
// read from the type, not written against its field, so that the package
// builds with every release and either tag.
var byteForm = func() bool {
	t := reflect.TypeFor[metav1.FieldsV1]()
	return t.NumField() == 1 && t.Field(0).Name == "Raw" && t.Field(0).Type == reflect.TypeFor[[]byte]()
}()

// rawBytes is the Raw field of f in the byte form (byteForm), to read and
// set.
func rawBytes(f *metav1.FieldsV1) reflect.Value {
	return reflect.ValueOf(f).Elem().Field(0)
}

// copyFieldSets copies the field set of each entry of in that has one into
// parts (the same length), as FieldsV1.DeepCopyInto does. In the byte form
// the bytes of all of them go in one allocation, each its own part of it
// (capacity limited, so that appending to one never writes into another);
// in the string form a field set is an immutable string, which
// DeepCopyInto shares at no cost.
func copyFieldSets(in []metav1.ManagedFieldsEntry, parts []managedFieldsParts) {
	if !byteForm {
		for i := range parts {
			if f := in[i].FieldsV1; f != nil {
				f.DeepCopyInto(&parts[i].fields)
			}
		}
		return
	}
	size := 0
	for i := range parts {
		if f := in[i].FieldsV1; f != nil {
			size += rawBytes(f).Len()
		}
	}
	var raw []byte
	if size > 0 {
		raw = make([]byte, 0, size)
	}
	for i := range parts {
		f := in[i].FieldsV1
		if f == nil {
			continue
		}
		src := rawBytes(f)
		switch {
		case src.IsNil():
			// A field set without bytes: DeepCopyInto keeps nil.
		case src.Len() == 0:
			rawBytes(&parts[i].fields).SetBytes([]byte{})
		default:
			start := len(raw)
			raw = append(raw, src.Bytes()...)
			rawBytes(&parts[i].fields).SetBytes(raw[start:len(raw):len(raw)])
		}
	}
}

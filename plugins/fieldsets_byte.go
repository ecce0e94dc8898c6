//go:build !fieldsv1string

package plugins

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// copyFieldSets deep-copies the field sets of in into parts[i].fields, as
// FieldsV1.DeepCopyInto does, but with the bytes of all of them in one
// allocation: byte-backed FieldsV1 (this build) copies each otherwise.
func copyFieldSets(in []metav1.ManagedFieldsEntry, parts []managedFieldsParts) {
	total := 0
	for i := range in {
		total += len(in[i].FieldsV1.GetRawBytes())
	}
	var block []byte
	if total > 0 {
		block = make([]byte, 0, total)
	}
	for i := range in {
		f := in[i].FieldsV1
		if f == nil {
			continue
		}
		raw := f.GetRawBytes()
		switch {
		case raw == nil:
			parts[i].fields = metav1.FieldsV1{}
		case len(raw) == 0:
			//lint:ignore SA1019 the accessors copy each field set; here they share one block, which only Raw can express
			parts[i].fields = metav1.FieldsV1{Raw: []byte{}}
		default:
			start := len(block)
			block = append(block, raw...)
			//lint:ignore SA1019 the accessors copy each field set; here they share one block, which only Raw can express
			parts[i].fields = metav1.FieldsV1{Raw: block[start:len(block):len(block)]}
		}
	}
}

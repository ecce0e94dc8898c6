//go:build fieldsv1string

package pvcopy

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// copyFieldSets copies the field set of each entry of in that has one into
// parts (the same length) through FieldsV1.DeepCopyInto: with the
// fieldsv1string build tag a field set is an immutable string, which a copy
// shares at no cost.
func copyFieldSets(in []metav1.ManagedFieldsEntry, parts []managedFieldsParts) {
	for i := range parts {
		if f := in[i].FieldsV1; f != nil {
			f.DeepCopyInto(&parts[i].fields)
		}
	}
}

//go:build fieldsv1string

package plugins

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// copyFieldSets deep-copies the field sets of in into parts[i].fields;
// string-backed FieldsV1 (this build) copies a handle, without allocating.
func copyFieldSets(in []metav1.ManagedFieldsEntry, parts []managedFieldsParts) {
	for i := range in {
		if f := in[i].FieldsV1; f != nil {
			f.DeepCopyInto(&parts[i].fields)
		}
	}
}

//go:build !fieldsv1string

package plugintest

//lint:file-ignore SA1019 the byte form of FieldsV1 is the one every release has.

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// FieldSet is a field set in the byte-slice form of FieldsV1,
// apimachinery's default, which every release from 1.30 has
// (metav1.NewFieldsV1 came later, with the fieldsv1string form).
func FieldSet(s string) *metav1.FieldsV1 {
	return &metav1.FieldsV1{Raw: []byte(s)}
}

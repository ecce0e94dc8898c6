//go:build fieldsv1string

package plugintest

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// FieldSet is a field set in the string form of FieldsV1 that
// apimachinery's fieldsv1string build tag selects.
func FieldSet(s string) *metav1.FieldsV1 {
	return metav1.NewFieldsV1(s)
}

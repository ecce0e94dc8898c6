package plugintest

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FieldSet is the field set s, in the form of FieldsV1 the build has: the
// byte slice Raw (every release to 1.37, set directly so that "" is an
// empty set, not a nil one) or 1.38's string form (without Raw, set
// through UnmarshalJSON). Neither metav1.NewFieldsV1 nor Raw is in every
// release this library builds with.
func FieldSet(s string) *metav1.FieldsV1 {
	f := &metav1.FieldsV1{}
	v := reflect.ValueOf(f).Elem()
	if v.NumField() == 1 && v.Type().Field(0).Name == "Raw" && v.Field(0).Kind() == reflect.Slice {
		v.Field(0).SetBytes([]byte(s))
		return f
	}
	_ = f.UnmarshalJSON([]byte(s))
	return f
}

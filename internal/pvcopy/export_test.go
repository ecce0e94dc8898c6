package pvcopy

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ByteForm is byteForm, for the tests.
var ByteForm = byteForm

// FieldBytes is the bytes of f in the byte form (the tests write into them).
func FieldBytes(f *metav1.FieldsV1) []byte { return rawBytes(f).Bytes() }

// SetFieldBytes sets the bytes of f in the byte form.
func SetFieldBytes(f *metav1.FieldsV1, b []byte) { rawBytes(f).SetBytes(b) }

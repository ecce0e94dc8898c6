// Package compat holds the differential tests and comparison benchmarks of
// csimigrate against k8s.io/csi-translation-lib v0.30.14, the last release
// with an RBD translator. It is its own module so that the library's import
// graph never includes csi-translation-lib.
package compat

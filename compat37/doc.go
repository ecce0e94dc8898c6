// Package compat37 proves that plugins move between csimigrate and
// k8s.io/csi-translation-lib v0.37 in both directions. It is its own module,
// outside the go.work workspace (whose single build list holds
// csi-translation-lib v0.30.14 for the RBD differential tests); run it with
// GOWORK=off, as scripts/test does.
package compat37

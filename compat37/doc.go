// Package compat37 proves that plugins move between csimigrate and
// k8s.io/csi-translation-lib v0.37 in both directions. It is its own module,
// outside the root's go.work workspace (whose single build list holds
// csi-translation-lib v0.30.14 for the RBD differential tests), with a
// workspace of its own (compat37/go.work) that uses the checkout's library.
package compat37

// Package vspherecsi pins the vSphere CSI driver release the vSphere tests
// run (sigs.k8s.io/vsphere-csi-driver/v3 v3.7.0, from the Go module
// proxy) as a tool of its own module: its go.mod carries the driver's own
// replace block (Kubernetes v0.35 / v1.35, controller-runtime v0.19.1),
// and its go.sum the driver's, so that the build needs no checksum-database
// lookups (three of the driver's dependencies are not in it).
// scripts/setup-vsphere builds the controller binary from here.
package vspherecsi

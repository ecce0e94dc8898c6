// Package vspheretest runs csimigrate's vSphere output against the real
// peers: govmomi's vCenter simulator (vcsim, govmomi v0.56.0, run as the
// process cmd/vcsim, built by scripts/build-vcsim with the fix of a
// deadlock of its ListView) and the vSphere CSI driver's controller (v3.7.0, built by
// scripts/setup-vsphere), with kube-apiserver from testenv. Where vcsim
// cannot play vCenter's part (registering a disk by its path), the tests
// play the driver's syncer and say so.
//
// It is a module of its own, outside the go.work workspace, so that
// govmomi's dependencies never reach the library or the other modules.
package vspheretest

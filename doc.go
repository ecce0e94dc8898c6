// Package csimigrate moves Kubernetes volumes from the removed in-tree RBD,
// CephFS and vSphere plugins to their CSI drivers: rbd.csi.ceph.com,
// cephfs.csi.ceph.com and csi.vsphere.vmware.com.
//
// It is a library for kube-controller-manager forks, CSI sidecars and other
// controllers, with the method set of k8s.io/csi-translation-lib, and a
// command-line tool (cmd/csimigrate) that plans and rewrites a
// cluster's in-tree PVs before an upgrade past the release that removed the
// plugins.
//
// The packages:
//
//   - translate: the registry and the Translator users call; every method of
//     csi-translation-lib's CSITranslator.
//   - plugin: the contract: the InTreePlugin interface, error kinds,
//     findings, annotations and names.
//   - plugins/rbd, plugins/cephfs and plugins/vsphere: the built-in
//     translators; plugins/ceph: the Ceph CSI cluster config;
//     plugins/vsphere/envcheck: the vSphere driver's environment checks.
//   - volumeid: RBD and CephFS migration handles, Ceph CSI volume IDs,
//     vSphere volume paths and the Ceph clusterID, as netip-style value types.
//   - secrets: redacted secret values, the Ceph migration secret remap, the
//     derived CephFS CSI secret, and StorageClass secret references.
//   - rewrite: the rules of a rewrite that plan, translate and rewrite -apply
//     share: the Secrets a migrated volume makes its driver read and whether
//     they are ready, the reclaim policy the driver can honour, the access
//     modes it serves, the classes replaced (no client; the first part of
//     the engine).
//   - plan: the planner of csimigrate plan and its report: whether each
//     volume and class of a cluster's objects can be migrated and what must
//     happen first, by the rules of package rewrite.
//   - adopt: what a volume becomes as one of its driver's own (Ceph CSI's
//     journal, vSphere First Class Disks), without a client.
//   - featuregate: the CSI-migration feature gates of every Kubernetes
//     release and who owns a plugin's volumes; featuregate/staged: the
//     staged migration planner of a running cluster; featuregate/versioned:
//     the gates as component-base versioned specs (k8s.io 1.31 or newer).
//
// The writer that applies the engine's decisions to a cluster, with
// client-go, is github.com/csimigrate/csimigrate/apply, a module of its
// own. The library's packages build with the k8s.io modules of Kubernetes
// 1.30 through 1.37 (docs/library.md).
//
// A short example:
//
//	tr, err := translate.New()
//	if err != nil { ... }
//	csiPV, err := tr.TranslateInTreePVToCSI(logger, inTreePV)
//	back, err := tr.TranslateCSIPVToInTree(csiPV) // equal to inTreePV
//
// Translation never modifies its input, never panics, is lossless both ways
// (what CSI has no field for travels in documented annotations), stays
// byte-compatible with csi-translation-lib where that library has a
// translator, and reports bad input with errors that name the field.
package csimigrate

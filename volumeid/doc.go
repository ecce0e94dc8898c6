// Package volumeid models the identifiers that CSI migration moves between
// Kubernetes and storage drivers as small value types in the style of
// net/netip: each has a Parse function, a String method that Parse reverses,
// and MarshalText/UnmarshalText so that it can be used in JSON, YAML and
// flags.
//
// The types are:
//
//   - [RBDHandle]: the migration volume handle of an in-tree RBD volume, in the
//     exact format that k8s.io/csi-translation-lib v0.30 composes and Ceph CSI
//     parses (mig_mons-<clusterID>_image-<name>_<hex pool>).
//   - [CephFSHandle]: this project's migration volume handle for in-tree
//     CephFS volumes (Kubernetes never defined one).
//   - [CephCSIVolumeID]: the volume IDs Ceph CSI composes for volumes it
//     provisions (0001-0020-<clusterID>-<location>-<uuid>).
//   - [VSpherePath]: an in-tree vSphere volume path, "[datastore] dir/disk.vmdk".
//
// [ClusterID] computes the Ceph CSI clusterID that migration derives from an
// in-tree monitor list.
//
// Parse errors wrap [ErrInvalid] and are *[ParseError] values that carry the
// input and what was expected, so callers can use errors.Is and errors.As.
package volumeid

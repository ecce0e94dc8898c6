// Package secrets handles the credentials side of CSI migration:
//
//   - [Value] and [Data] hold secret data and never print it;
//   - Ceph: [CephCSICredentials] reads a CSI request's secrets exactly as Ceph
//     CSI does, including the migration remap of an in-tree secret ("key", and
//     "adminId" for the user); [CephMigrationSecretFixes] tells which fields an
//     in-tree RBD secret needs before migration; [CephFSCSISecret] and
//     [CephFSCSISecretName] derive the CSI secret a migrated CephFS volume
//     needs, leaving the in-tree secret untouched;
//   - StorageClass secret references: [Resolve] computes every CSI secret
//     reference from StorageClass parameters and their templates exactly as
//     external-provisioner does, nodeExpandSecretRef included, and
//     [StripReserved] removes the reserved keys before parameters reach a
//     driver.
//
// No function here puts a secret's value into an error, a log line or a
// String result.
package secrets

package plugin

// Annotations the built-in plugins write on translated objects, so that a
// translation is lossless both ways. Their values are part of the stored
// objects, and so of this module's compatibility promise.
const (
	// AnnCSIOverrides carries, on an in-tree PV produced by a reverse
	// translation, the parts of the original CSI PV that a forward
	// translation of the in-tree PV would not reproduce: a volume handle,
	// volume attributes, readOnly, fsType, secret references (the
	// node-expand one above all: in-tree sources have no field for it) and
	// access modes. A forward translation applies and removes it, so
	// CSI -> in-tree -> CSI gives the original CSI source back.
	//
	// This is what lets a CSI PV survive external-provisioner's round trip
	// through a migrated in-tree StorageClass: the provisioner translates
	// the new CSI PV back to in-tree before storing it, and every later
	// forward translation restores the references it had.
	//
	// The value is a JSON object with the optional members "volumeHandle",
	// "readOnly", "fsType", "volumeAttributes" (a map; null removes an
	// attribute), "secretRefs" (a map from "nodeStage", "nodePublish",
	// "controllerPublish", "controllerExpand", "nodeExpand" to a
	// SecretReference or null) and "accessModes".
	AnnCSIOverrides = "csimigrate.io/csi-overrides"

	// AnnOriginalVolumeHandle is set on a CSI PV by the forward translation
	// of a plugin whose in-tree plugin csi-translation-lib also translates
	// (RBD, vSphere), when [AnnCSIOverrides] recorded a volume handle other
	// than the one csi-translation-lib computes for the same in-tree PV. The
	// PV gets the stock handle, so that every component agrees on the
	// VolumeAttachment name and the kubelet's volume name whichever library
	// it runs, and the recorded handle is kept here; a reverse translation
	// records it again.
	AnnOriginalVolumeHandle = "csimigrate.io/original-volume-handle"

	// AnnOriginalProvisionedBy records, on a CSI PV that replaced an in-tree
	// PV (csimigrate rewrite), the in-tree PV's
	// pv.kubernetes.io/provisioned-by, only where it had one (an empty one
	// included): the replacement names its CSI driver there, which
	// external-provisioner requires before it deletes a released volume. A
	// reverse translation restores the original value exactly.
	AnnOriginalProvisionedBy = "csimigrate.io/original-provisioned-by"

	// AnnProvisionedBy names the provisioner of a dynamically provisioned
	// PV (Kubernetes'); external-provisioner deletes only the released PVs
	// it names.
	AnnProvisionedBy = "pv.kubernetes.io/provisioned-by"

	// AnnOriginalReclaimPolicy records the PV's reclaim policy before a
	// rewrite's first step set Retain (package rewrite's AnnReclaimPolicy):
	// the policy a check judges while a rewrite is under way.
	AnnOriginalReclaimPolicy = "csimigrate.io/original-reclaim-policy"

	// AnnAccessModes is set by a forward translation that had to change a
	// PV's access modes (for example RBD, where Ceph CSI accepts only
	// ReadWriteOnce or ReadOnlyMany for a migrated file-system volume). Its
	// value is the original list, comma-joined, or a JSON array when an
	// element is empty or holds a ","; the reverse translation restores it.
	AnnAccessModes = "csimigrate.io/access-modes"
)

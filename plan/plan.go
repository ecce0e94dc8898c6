// Package plan decides, for a cluster's objects as they arrive, whether each
// in-tree volume and class can be migrated and what must happen first: the
// planner of csimigrate plan, with its report. It reads objects, never a
// cluster, and applies the rules of package rewrite, so that what it calls
// migratable is what a rewrite does.
package plan

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/rewrite"
)

// Plan is the report of `csimigrate plan`.
type Plan struct {
	// Hazards concern the cluster rather than one volume.
	Hazards        []plugin.Finding    `json:"hazards,omitempty"`
	Volumes        []VolumePlan        `json:"volumes"`
	InlineVolumes  []InlinePlan        `json:"inlineVolumes,omitempty"`
	ClaimTemplates []ClaimTemplatePlan `json:"claimTemplates,omitempty"`
	StorageClasses []StorageClassPlan  `json:"storageClasses,omitempty"`
	CephClusters   []ceph.ClusterEntry `json:"cephClusters,omitempty"`
	Secrets        []SecretPlan        `json:"secrets,omitempty"`
	FeatureGates   []string            `json:"featureGateSteps,omitempty"`
	Blocked        bool                `json:"blocked"`
	// CephCSIConfig says, for each Ceph CSI deployment the migrated
	// volumes and classes go to, where it reads its cluster entries, which
	// it serves, and the missing ones in the form that lasts there (none
	// without Ceph volumes or classes).
	CephCSIConfig []CephCSIConfigPlan `json:"cephCSIConfig,omitempty"`
	// KubernetesMinor is the release the plan is for (0: none given), and
	// ServerVersion the API server's version as read from the cluster (""
	// when the input is files).
	KubernetesMinor int    `json:"kubernetesMinor,omitempty"`
	ServerVersion   string `json:"serverVersion,omitempty"`
	// Broken are, on a release that neither has an in-tree plugin nor
	// translates it (RBD and CephFS from 1.31), that plugin's PVs, with
	// the pods they keep from starting; Rescue is then what mends them,
	// in order (empty where nothing is broken).
	Broken []BrokenVolume `json:"broken,omitempty"`
	Rescue []RescueStep   `json:"rescue,omitempty"`
	// VCenter is what the plan read from vCenter (with Options.VCenter and
	// vSphere volumes or classes in the input).
	VCenter *VCenterReport `json:"vcenter,omitempty"`
}

// VolumePlan is the plan for one in-tree PV.
type VolumePlan struct {
	Name       string           `json:"name"`
	Plugin     string           `json:"plugin"`
	Driver     string           `json:"driver,omitempty"`
	Migratable bool             `json:"migratable"`
	Reason     string           `json:"reason,omitempty"`
	Claim      string           `json:"claim,omitempty"`
	InUseBy    []string         `json:"inUseBy,omitempty"`
	Findings   []plugin.Finding `json:"findings,omitempty"`
	Handle     string           `json:"volumeHandle,omitempty"`
	// Form is what a migrated volume is to its CSI driver (package adopt's
	// forms): "native" for an RBD image rewrite -apply -adopt can register
	// in Ceph CSI's journal (predicted from its class's imageFeatures; the
	// rewrite reads the image) and for a vSphere disk it can register as a
	// First Class Disk, "migration-handle" for one it cannot, and "static"
	// for CephFS; Features are the CSI operations the driver then serves and
	// FormWhy why they are fewer than a native volume's, and what the
	// volume gets without adoption.
	Form     string   `json:"form,omitempty"`
	Features []string `json:"features,omitempty"`
	FormWhy  []string `json:"formWhy,omitempty"`
	// AdoptClusterID is the clusterID an adopted Ceph volume's ID names:
	// the entry of the driver's own deployment for the volume's Ceph
	// cluster (compared by fsid, with Options.CephFSID), else its
	// migration entry; "" where the form is not native.
	AdoptClusterID string `json:"adoptClusterID,omitempty"`
	// KeptBy are the tools that keep the PV from a source of their own
	// (rewrite.KeepersOf), and Source the PV as that source should hold
	// it after the rewrite (rewrite.SourcePV of the replacement; nil when
	// the volume is not migratable for another reason). An adoption
	// decides the volume handle when it runs: with -adopt, the source
	// takes the handle of the PV it wrote.
	KeptBy []rewrite.Keeper     `json:"keptBy,omitempty"`
	Source *v1.PersistentVolume `json:"source,omitempty"`
}

// InlinePlan is the plan for one inline in-tree volume of a workload's pod
// template or of a pod.
type InlinePlan struct {
	// Workload is "Kind namespace/name" of the object whose pod spec has
	// the volume: the top owner in the input (a Deployment rather than its
	// ReplicaSets and pods), which is the object to change.
	Workload string `json:"workload"`
	Volume   string `json:"volume"`
	Plugin   string `json:"plugin"`
	// Via lists the objects owned by Workload that carry the same volume
	// (its ReplicaSets, Jobs, pods), when they are in the input.
	Via        []string `json:"via,omitempty"`
	Migratable bool     `json:"migratable"`
	Reason     string   `json:"reason,omitempty"`
	// Claim is the name of the PV and claim of the volume's translation
	// (rewrite.NewInlineForm) that replace it.
	Claim string `json:"claim,omitempty"`
}

// ClaimTemplatePlan is a StatefulSet volumeClaimTemplate whose class is an
// in-tree one: claims made from it after the upgrade are provisioned by
// the class csimigrate recreates.
type ClaimTemplatePlan struct {
	StatefulSet  string `json:"statefulSet"`
	Template     string `json:"template"`
	StorageClass string `json:"storageClass"`
	Migratable   bool   `json:"migratable"`
	Reason       string `json:"reason"`
}

// StorageClassPlan says how to recreate an in-tree StorageClass.
type StorageClassPlan struct {
	Name       string `json:"name"`
	From       string `json:"from"`
	To         string `json:"to,omitempty"`
	Migratable bool   `json:"migratable"`
	Reason     string `json:"reason,omitempty"`
	// Codes are the codes of what blocks the class, in order (none when it
	// is migratable): the codes rewrite -apply refuses it with.
	Codes []string `json:"codes,omitempty"`
	// KeptBy, Kept and Source are VolumePlan's for the class: Kept is the
	// finding (FindingKeptByReconciler), which blocks the class while its
	// keepers have not been told.
	KeptBy []rewrite.Keeper        `json:"keptBy,omitempty"`
	Kept   *plugin.Finding         `json:"kept,omitempty"`
	Source *storagev1.StorageClass `json:"source,omitempty"`
}

// SecretPlan is a Secret to create or change. Values are never included.
type SecretPlan struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Action    string   `json:"action"`
	Fields    []string `json:"fields"`
	From      string   `json:"from,omitempty"`
	Reason    string   `json:"reason"`
	// KeptBy are the tools that keep the Secret (rewrite.KeepersOf): a
	// change belongs in their source, which Reason names.
	KeptBy []rewrite.Keeper `json:"keptBy,omitempty"`
}

// Finding codes of the plan itself (the library's are the plugins').
const (
	// FindingRewriteRefuses: rewrite -apply would refuse the PV.
	FindingRewriteRefuses = "RewriteRefuses"
	// FindingClaimNotChecked: the input has no claims to check a binding.
	FindingClaimNotChecked = "ClaimNotChecked"
	// FindingReclaimKept: the rewritten PV keeps Retain instead of Delete.
	FindingReclaimKept = "ReclaimPolicyKeptRetain"
	// FindingSecretMissing: a Secret a migrated volume or class needs is
	// not in the input (or, for rewrite -apply, not in the cluster).
	FindingSecretMissing = string(rewrite.CodeSecretMissing)
	// FindingSecretsNotChecked: the input has no Secrets.
	FindingSecretsNotChecked = "SecretsNotChecked"
	// FindingVolumeInUse: pods use the volume; the rewrite waits for them
	// to stop, or replaces it under them only online. The code is the
	// refusal's (rewrite.CodeInUse).
	FindingVolumeInUse = string(rewrite.CodeInUse)
	// FindingCephConfigEntry: an entry of the Ceph CSI cluster config
	// given to the translator that Ceph CSI would not serve.
	FindingCephConfigEntry = "CephConfigEntry"
	// FindingClassSecretNeedsAdminId: an RBD class's admin secret lacks
	// the adminId of a non-admin adminId parameter.
	FindingClassSecretNeedsAdminId = "RBDClassSecretNeedsAdminId"
	// FindingSecretNotReady: a Secret a migrated volume (or class) makes
	// the Ceph CSI driver read is missing or lacks what the driver reads.
	FindingSecretNotReady = string(rewrite.CodeSecretNotReady)
	// FindingAccessModesChanged: the rewritten PV has other access modes
	// than the in-tree PV (a translation narrowed them).
	FindingAccessModesChanged = "AccessModesChanged"
	// FindingKeptByReconciler: a tool keeps the object from a source of
	// its own (rewrite.KeepersOf). A blocker while one that reconciles it
	// has not been told of the new form (rewrite.KeptRefusal, the writer's
	// rule); a warning once the source is said to have changed, or for a
	// tool that only creates the object when it is missing.
	FindingKeptByReconciler = string(rewrite.CodeKeptByReconciler)
	// FindingVersionMismatch: the plan is for another release than the
	// API server runs.
	FindingVersionMismatch = "KubernetesVersionMismatch"
	// FindingWriterRunning: a csimigrate writer holds the writer Lease.
	FindingWriterRunning = "WriterRunning"
)

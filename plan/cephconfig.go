package plan

// The plan's Ceph CSI config is made in stages, a file each:
//   - cephconfig_read.go reads what shows how Ceph CSI is deployed
//     (cephConfigInput) and the entries the volumes and classes need;
//   - cephconfig_locate.go finds where each driver reads its entries
//     (locateAll: a CephCSIConfigPlan per config) and what it reads now;
//   - cephconfig_judge.go judges which entries each config serves or
//     lacks, and the findings of the volumes and classes it does not
//     serve;
//   - cephconfig_render.go gives the missing entries in the form that
//     lasts in the deployment;
//   - cephconfig_adopt.go chooses the clusterID an adopted volume names.
// settleCephConfig, below, runs them in that order.

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/rewrite"
)

// How a Ceph CSI driver is deployed, which decides where it reads its
// cluster entries (config.json) and in what form an entry lasts there.
const (
	// DeploymentHelm: Ceph CSI's Helm chart, which renders ConfigMap
	// ceph-csi-config from its csiConfig value.
	DeploymentHelm = "helm"
	// DeploymentManifests: Ceph CSI's deploy/ manifests or another
	// deployment that leaves ceph-csi-config to the administrator.
	DeploymentManifests = "manifests"
	// DeploymentRook: Rook up to 1.17 (and 1.18, 1.19 without the
	// operator), ConfigMap rook-ceph-csi-config, key csi-cluster-config-json.
	DeploymentRook = "rook"
	// DeploymentOperator: the ceph-csi-operator (standalone, or Rook from
	// 1.18), which renders ceph-csi-config from ClientProfiles and
	// CephConnections.
	DeploymentOperator = "ceph-csi-operator"
)

// Finding codes of the Ceph CSI cluster config.
const (
	// FindingCephClusterEntryMissing: the driver's config has no entry for
	// the volume's clusterID yet. The code is the refusal's
	// (rewrite.CodeCephEntryMissing): one code per condition, in the plan,
	// the writer's refusals, the controller's Events and its metrics.
	FindingCephClusterEntryMissing = string(rewrite.CodeCephEntryMissing)
	// FindingCephCSIConfigNotFound: where the driver reads its config is
	// not in the input (the writer's refusal of the same code:
	// rewrite.CodeCephCSIConfigNotFound).
	FindingCephCSIConfigNotFound = string(rewrite.CodeCephCSIConfigNotFound)
)

// The names Ceph CSI's deployments give the config map and its key.
const (
	cephCSIConfigMap  = "ceph-csi-config"
	cephCSIConfigKey  = "config.json"
	rookCSIConfigMap  = "rook-ceph-csi-config"
	rookCSIConfigKey  = "csi-cluster-config-json"
	operatorGroup     = "csi.ceph.io"
	operatorOwnerRef  = "csi.ceph.io/ownerref"
	helmReleaseAnn    = "meta.helm.sh/release-name"
	clientProfileKind = "ClientProfile"
)

// CephCSIConfigPlan says where a Ceph CSI driver reads its cluster entries
// (config.json), which of those the migrated volumes need it serves, and
// the missing ones in the form that lasts in its deployment.
type CephCSIConfigPlan struct {
	// Drivers are the Ceph CSI drivers that read it.
	Drivers []string `json:"drivers"`
	// Deployment is one of the Deployment constants, "" when the input
	// does not show where the driver reads its config (Reason says why).
	Deployment string `json:"deployment,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	ConfigMap  string `json:"configMap,omitempty"`
	Key        string `json:"key,omitempty"`
	// HelmRelease is the chart's release (helm).
	HelmRelease string `json:"helmRelease,omitempty"`
	// Entries are the cluster entries it reads now, in its order.
	Entries []ceph.ClusterEntry `json:"entries,omitempty"`
	// Served are the clusterIDs the migrated volumes need that it serves.
	Served []string `json:"served,omitempty"`
	// Missing are the entries it lacks; the volumes that need them are
	// blocked until it serves them.
	Missing []ceph.ClusterEntry `json:"missing,omitempty"`
	// ConfigMapMerged (manifests, rook) is the config map with every
	// entry it has, unchanged, and the missing ones added.
	ConfigMapMerged *v1.ConfigMap `json:"configMapMerged,omitempty"`
	// HelmValues (helm) is the chart's csiConfig value with its entries
	// and the missing ones, for the next helm upgrade.
	HelmValues string `json:"helmValues,omitempty"`
	// Objects (ceph-csi-operator) are a CephConnection and a
	// ClientProfile named by the clusterID for each missing entry.
	Objects []*unstructured.Unstructured `json:"objects,omitempty"`
	// Reason says why the deployment is not known.
	Reason string `json:"reason,omitempty"`
	// Install: the input's CSIDrivers show no Ceph CSI driver and
	// nothing of Ceph CSI's: the plan is its installation with the
	// ceph-csi-operator (Ceph CSI v3.18 deprecates its Helm charts and
	// manifests for it), in OperatorInstallNamespace: Objects start with
	// a Driver per driver, and every entry the volumes need is Missing.
	Install bool `json:"install,omitempty"`
}

// OperatorInstallNamespace is where the plan puts the ceph-csi-operator's
// objects for a cluster without Ceph CSI: the namespace of the operator's
// own deployment manifests.
const OperatorInstallNamespace = "ceph-csi-operator-system"

// settleCephConfig plans where each Ceph CSI driver reads its cluster
// entries, and blocks the volumes and classes whose entry it does not
// serve yet (or, where the input does not show its config, whose entry is
// not checked). Which clusterID adopted volumes name, and which volumes
// it blocks, it returns.
func (p *Planner) settleCephConfig(plan *Plan, at volumeIndex) []volumeNote {
	c := &p.ceph.config
	configs, configOf := c.locateAll(p.drivers.driverName, p.drivers.absent, p.opts.CephCSINamespace)
	volumes, classes := map[string]plugin.Finding{}, map[string]plugin.Finding{}
	for _, inTree := range cephBackends {
		if i, ok := configOf[inTree]; ok {
			c.judge(&configs[i], inTree, p.drivers.driverName(inTree), volumes, classes)
		}
	}
	for i := range configs {
		if configs[i].Reason == "" {
			c.render(&configs[i])
		}
	}
	plan.CephCSIConfig = configs
	notes := p.joinDeployments(plan, at)
	for _, pv := range slices.Sorted(maps.Keys(volumes)) {
		notes = append(notes, blockedBy(pv, volumes[pv]))
	}
	for _, name := range slices.Sorted(maps.Keys(classes)) {
		if i := slices.IndexFunc(plan.StorageClasses, func(s StorageClassPlan) bool { return s.Name == name }); i >= 0 && !slices.Contains(plan.StorageClasses[i].Codes, string(rewrite.CodeNotTranslatable)) {
			f := classes[name]
			p.classBlocked(name, f.Code, f.Message+"; "+f.Remedy)
		}
	}
	return notes
}

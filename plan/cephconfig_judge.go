package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
)

// judge says of each entry that inTree's volumes and classes need whether
// cp, the config driver reads, serves it, recording it in cp's Served or
// Missing, and adds to volumes and classes the finding that blocks those
// whose entry cp does not serve (or where cp's location is not known).
func (c *cephConfigInput) judge(cp *CephCSIConfigPlan, inTree, driver string, volumes, classes map[string]plugin.Finding) {
	needs := c.needs[inTree]
	served := map[string]bool{}
	if cp.Reason == "" {
		cp.Entries, served = c.entries(*cp), c.served(*cp)
	}
	for _, id := range slices.Sorted(maps.Keys(needs)) {
		n := needs[id]
		var f plugin.Finding
		switch {
		case served[id]:
			if !slices.Contains(cp.Served, id) {
				cp.Served = append(cp.Served, id)
			}
			continue
		case cp.Reason != "":
			f = *configNotFound(driver, cp.Reason, id)
		default:
			if !slices.ContainsFunc(cp.Missing, func(e ceph.ClusterEntry) bool { return e.ClusterID == id }) {
				cp.Missing = append(cp.Missing, n.entry)
			}
			msg := fmt.Sprintf("%s (%s in %s) has no cluster entry %s (monitors %s): it would not mount the migrated volume", driver, cp.Deployment, cp.Namespace, id, strings.Join(n.entry.Monitors, ","))
			if cp.Install {
				msg = fmt.Sprintf("%s is not installed, and nothing of Ceph CSI's is in the input: installed by the ceph-csi-operator, it needs cluster entry %s (monitors %s) for the migrated volume", driver, id, strings.Join(n.entry.Monitors, ","))
			}
			f = plugin.Finding{Code: FindingCephClusterEntryMissing, Severity: plugin.SeverityBlocker, Field: "ConfigMap " + cp.Namespace + "/" + cp.ConfigMap,
				Message: msg, Remedy: entryRemedy(*cp)}
		}
		for _, v := range n.volumes {
			volumes[v] = f
		}
		for _, sc := range n.classes {
			classes[sc] = f
		}
	}
}

// entryRemedy says how to add an entry so that it lasts in cp's deployment.
func entryRemedy(cp CephCSIConfigPlan) string {
	switch cp.Deployment {
	case DeploymentHelm:
		return "add the entry to the csiConfig value of Helm release " + cp.HelmRelease + " and upgrade it (an edit of the rendered config map is lost at the next upgrade); the plan gives the value"
	case DeploymentRook:
		return "add the entry, without a namespace field, to key " + rookCSIConfigKey + " of ConfigMap " + cp.Namespace + "/" + rookCSIConfigMap + ", keeping Rook's entries; the plan gives the merged map"
	case DeploymentOperator:
		if cp.Install {
			return "no Ceph CSI is installed: install the ceph-csi-operator (namespace " + cp.Namespace + ") and create the Driver, CephConnection and ClientProfile the plan gives; the operator deploys the driver and renders the entry into " + cephCSIConfigMap
		}
		return "create the CephConnection and the ClientProfile named by the clusterID in namespace " + cp.Namespace + " (the operator renders them into " + cephCSIConfigMap + "); the plan gives them"
	}
	return "add the entry to key " + cp.Key + " of ConfigMap " + cp.Namespace + "/" + cp.ConfigMap + ", keeping its other entries (they serve the cluster's other volumes); the plan gives the merged map"
}

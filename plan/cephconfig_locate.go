package plan

import (
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
)

// cephBackends are the in-tree plugins whose volumes Ceph CSI serves, in
// the order the plan lists their configs.
var cephBackends = []string{plugin.RBDInTreePluginName, plugin.CephFSInTreePluginName}

// locateAll finds the config each Ceph CSI driver the volumes and classes
// need reads (its installation with the ceph-csi-operator where absent
// says the cluster has no such driver and the input shows nothing of Ceph
// CSI): one CephCSIConfigPlan per config, RBD's and CephFS's merged where
// one deployment's drivers read one config, and which of them each
// backend's driver reads (configOf, by in-tree plugin).
func (c *cephConfigInput) locateAll(driverOf func(string) string, absent func(driver string) bool, fallbackNS string) (configs []CephCSIConfigPlan, configOf map[string]int) {
	configOf = map[string]int{}
	for _, inTree := range cephBackends {
		if len(c.needs[inTree]) == 0 {
			continue
		}
		driver := driverOf(inTree)
		cp := c.locate(driver, fallbackNS)
		if cp.Deployment == "" && absent(driver) && len(c.pods[driver]) == 0 && len(c.operatorDrivers) == 0 && !c.anyConfigMap() {
			cp = CephCSIConfigPlan{Drivers: []string{driver}, Deployment: DeploymentOperator, Namespace: OperatorInstallNamespace,
				ConfigMap: cephCSIConfigMap, Key: cephCSIConfigKey, Install: true}
		}
		// RBD and CephFS of one deployment read one config.
		if i := slices.IndexFunc(configs, func(o CephCSIConfigPlan) bool {
			return o.Deployment != "" && o.Reason == "" && cp.Reason == "" && o.Deployment == cp.Deployment && o.Namespace == cp.Namespace && o.ConfigMap == cp.ConfigMap
		}); i >= 0 {
			configs[i].Drivers = append(configs[i].Drivers, driver)
			configOf[inTree] = i
			continue
		}
		configOf[inTree] = len(configs)
		configs = append(configs, cp)
	}
	return configs, configOf
}

// locate says where driver reads its config, as the input shows it.
func (c *cephConfigInput) locate(driver, fallbackNS string) CephCSIConfigPlan {
	cp := CephCSIConfigPlan{Drivers: []string{driver}}
	pods := c.pods[driver]
	var pod *cephDriverPod
	for i := range pods {
		if pods[i].configMap != "" {
			pod = &pods[i]
			break
		}
	}
	opNS, operator := c.operatorDrivers[driver]
	// What the driver's pods mount comes first: Rook's map is read only by
	// Rook's own (pre-operator) drivers, whatever else the input has.
	switch {
	case pod != nil && pod.configMap == rookCSIConfigMap:
		cp.Deployment, cp.Namespace, cp.ConfigMap, cp.Key = DeploymentRook, pod.namespace, rookCSIConfigMap, rookCSIConfigKey
	case operator:
		cp.Deployment, cp.Namespace, cp.ConfigMap, cp.Key = DeploymentOperator, opNS, cephCSIConfigMap, cephCSIConfigKey
		if cp.Namespace == "" && pod != nil {
			cp.Namespace = pod.namespace
		}
	case pod != nil:
		cp.Namespace, cp.ConfigMap, cp.Key = pod.namespace, pod.configMap, cephCSIConfigKey
		cp.Deployment, cp.HelmRelease = DeploymentManifests, pod.helm
	default:
		// No pod of the driver in the input: the one config map that can
		// be its.
		var cands []*v1.ConfigMap
		for _, k := range slices.Sorted(maps.Keys(c.maps)) {
			m := c.maps[k]
			if fallbackNS != "" && m.Namespace != fallbackNS {
				continue
			}
			if m.Name == rookCSIConfigMap && driver != plugin.UpstreamDriverName(plugin.InTreeNameOfDriver(driver)) || m.Name == cephCSIConfigMap {
				cands = append(cands, m)
			}
		}
		switch {
		case len(cands) == 1 && cands[0].Name == rookCSIConfigMap:
			cp.Deployment, cp.Namespace, cp.ConfigMap, cp.Key = DeploymentRook, cands[0].Namespace, rookCSIConfigMap, rookCSIConfigKey
		case len(cands) == 1:
			cp.Deployment, cp.Namespace, cp.ConfigMap, cp.Key = DeploymentManifests, cands[0].Namespace, cephCSIConfigMap, cephCSIConfigKey
		case len(cands) == 0:
			cp.Reason = "the input has neither the driver's pods (run with --drivername=" + driver + ") nor a Ceph CSI config map (" + cephCSIConfigMap + ", " + rookCSIConfigMap + ") nor the ceph-csi-operator's Driver"
			return cp
		default:
			var names []string
			for _, m := range cands {
				names = append(names, m.Namespace+"/"+m.Name)
			}
			cp.Reason = "the input has no pod of the driver (run with --drivername=" + driver + ") to tell which of the config maps " + strings.Join(names, ", ") + " it reads"
			return cp
		}
	}
	m := c.maps[cp.Namespace+"/"+cp.ConfigMap]
	if cp.Deployment == DeploymentManifests {
		if m != nil && cp.HelmRelease == "" {
			cp.HelmRelease = m.Annotations[helmReleaseAnn]
		}
		if cp.HelmRelease != "" {
			cp.Deployment = DeploymentHelm
		}
	}
	// What it serves is judged only on what it reads: a map the input
	// lacks is never replaced by one of the plan's.
	switch {
	case cp.Deployment == DeploymentOperator && m == nil && !c.hasProfiles(cp.Namespace):
		cp.Reason = "the input has neither ConfigMap " + cp.Namespace + "/" + cephCSIConfigMap + ", which the operator renders, nor its ClientProfiles and CephConnections"
	case cp.Deployment != DeploymentOperator && m == nil:
		cp.Reason = "ConfigMap " + cp.Namespace + "/" + cp.ConfigMap + ", which the driver reads, is not in the input"
	}
	return cp
}

// anyConfigMap reports whether the input has a config map of Ceph CSI's
// or Rook's name in any namespace.
func (c *cephConfigInput) anyConfigMap() bool {
	for _, m := range c.maps {
		if m.Name == cephCSIConfigMap || m.Name == rookCSIConfigMap {
			return true
		}
	}
	return false
}

// hasProfiles reports whether the input has ClientProfiles in ns.
func (c *cephConfigInput) hasProfiles(ns string) bool {
	for key := range c.profiles {
		if strings.HasPrefix(key, ns+"/") {
			return true
		}
	}
	return false
}

// entries are the cluster entries cp's config holds now, in the order the
// driver reads them: its config map's, then (for the operator) those of its
// ClientProfiles not rendered into the map yet.
func (c *cephConfigInput) entries(cp CephCSIConfigPlan) []ceph.ClusterEntry {
	var out []ceph.ClusterEntry
	if m := c.maps[cp.Namespace+"/"+cp.ConfigMap]; m != nil {
		if cfg, err := ceph.ParseClusterConfig([]byte(m.Data[cp.Key])); err == nil {
			out = cfg.Entries()
		}
	}
	if cp.Deployment == DeploymentOperator {
		for _, key := range slices.Sorted(maps.Keys(c.profiles)) {
			ns, name, _ := strings.Cut(key, "/")
			if ns == cp.Namespace && !slices.ContainsFunc(out, func(e ceph.ClusterEntry) bool { return e.ClusterID == name }) {
				out = append(out, ceph.ClusterEntry{ClusterID: name, Monitors: slices.Clone(c.connections[c.profiles[key]])})
			}
		}
	}
	return out
}

// served are the clusterIDs cp's config serves now, with monitors.
func (c *cephConfigInput) served(cp CephCSIConfigPlan) map[string]bool {
	out := map[string]bool{}
	for _, e := range c.entries(cp) {
		if len(e.Monitors) > 0 && !slices.Contains(e.Monitors, "") {
			out[e.ClusterID] = true
		}
	}
	return out
}

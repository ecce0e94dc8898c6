package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/csimigrate/csimigrate/adopt"
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
	// the volume's clusterID yet.
	FindingCephClusterEntryMissing = "CephClusterEntryMissing"
	// FindingCephCSIConfigNotFound: where the driver reads its config is
	// not in the input.
	FindingCephCSIConfigNotFound = "CephCSIConfigNotFound"
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

// cephDriverPod is what a workload running a Ceph CSI driver says of where
// the driver reads its config.
type cephDriverPod struct {
	namespace, configMap string
	helm                 string // the Helm release of its labels, "" for none
}

// cephConfigInput are the objects that show how Ceph CSI is deployed.
type cephConfigInput struct {
	// pods are the workloads running each driver (by --drivername).
	pods map[string][]cephDriverPod
	// maps are the config maps that may hold cluster entries, by
	// "namespace/name".
	maps map[string]*v1.ConfigMap
	// operatorDrivers are the namespaces of the operator's Driver objects
	// (and CSIDrivers it owns), by driver name.
	operatorDrivers map[string]string
	// profiles are the operator's ClientProfiles by "namespace/name", with
	// the monitors of their CephConnection (settled when read).
	profiles    map[string]string // -> CephConnection name
	connections map[string][]string
	// needs are the entries each backend's volumes need, by in-tree plugin
	// and clusterID, and the volumes and classes that need them.
	needs map[string]map[string]*entryNeed
}

type entryNeed struct {
	entry   ceph.ClusterEntry
	volumes []int
	classes []string
}

// addObject reads what shows Ceph CSI's deployment; false for other
// objects.
func (c *cephConfigInput) addObject(obj any) bool {
	switch o := obj.(type) {
	case *v1.ConfigMap:
		if o.Data[cephCSIConfigKey] == "" && o.Data[rookCSIConfigKey] == "" {
			return true
		}
		if c.maps == nil {
			c.maps = map[string]*v1.ConfigMap{}
		}
		c.maps[o.Namespace+"/"+o.Name] = &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name,
			Labels: o.Labels, Annotations: o.Annotations}, Data: map[string]string{cephCSIConfigKey: o.Data[cephCSIConfigKey], rookCSIConfigKey: o.Data[rookCSIConfigKey]}}
	case *storagev1.CSIDriver:
		if ref := o.Annotations[operatorOwnerRef]; ref != "" && plugin.InTreeNameOfDriver(o.Name) != "" {
			var owner struct {
				Namespace string `json:"namespace"`
			}
			if json.Unmarshal([]byte(ref), &owner) == nil {
				c.operator(o.Name, owner.Namespace)
			}
		}
		return false // the drivers read it too
	case *unstructured.Unstructured:
		gv := strings.SplitN(o.GetAPIVersion(), "/", 2)[0]
		if gv != operatorGroup {
			return false
		}
		key := o.GetNamespace() + "/" + o.GetName()
		switch o.GetKind() {
		case "Driver":
			c.operator(o.GetName(), o.GetNamespace())
		case clientProfileKind:
			conn, _, _ := unstructured.NestedString(o.Object, "spec", "cephConnectionRef", "name")
			if c.profiles == nil {
				c.profiles = map[string]string{}
			}
			c.profiles[key] = o.GetNamespace() + "/" + conn
		case "CephConnection":
			mons, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "monitors")
			if c.connections == nil {
				c.connections = map[string][]string{}
			}
			c.connections[key] = mons
		}
	default:
		return false
	}
	return true
}

func (c *cephConfigInput) operator(driver, ns string) {
	if c.operatorDrivers == nil {
		c.operatorDrivers = map[string]string{}
	}
	if ns != "" || c.operatorDrivers[driver] == "" {
		c.operatorDrivers[driver] = ns
	}
}

// addWorkload records where a workload's Ceph CSI driver reads its config:
// a container run with --drivername of a Ceph CSI driver, and the config
// map its pod mounts as config.json.
func (c *cephConfigInput) addWorkload(w *rewrite.Workload) {
	if w.Spec == nil {
		return
	}
	var drivers []string
	for _, ct := range slices.Concat(w.Spec.InitContainers, w.Spec.Containers) {
		args := slices.Concat(ct.Command, ct.Args)
		for i, a := range args {
			name, ok := strings.CutPrefix(strings.TrimLeft(a, "-"), "drivername")
			switch {
			case !ok || !strings.HasPrefix(a, "-"):
				continue
			case strings.HasPrefix(name, "="):
				name = name[1:]
			case name == "" && i+1 < len(args):
				name = args[i+1]
			default:
				continue
			}
			if inTree := plugin.InTreeNameOfDriver(name); (inTree == plugin.RBDInTreePluginName || inTree == plugin.CephFSInTreePluginName) && !slices.Contains(drivers, name) {
				drivers = append(drivers, name)
			}
		}
	}
	if len(drivers) == 0 {
		return
	}
	pod := cephDriverPod{namespace: w.Namespace}
	for _, vol := range w.Spec.Volumes {
		cm := vol.ConfigMap
		if cm == nil {
			continue
		}
		mountsConfig := cm.Name == cephCSIConfigMap || cm.Name == rookCSIConfigMap ||
			slices.ContainsFunc(cm.Items, func(k v1.KeyToPath) bool { return k.Path == cephCSIConfigKey })
		if mountsConfig {
			pod.configMap = cm.Name
		}
	}
	if w.Meta != nil {
		l := w.Meta.Labels
		if l["app.kubernetes.io/managed-by"] == "Helm" || l["heritage"] == "Helm" {
			pod.helm = firstNonEmpty(w.Meta.Annotations[helmReleaseAnn], l["release"], l["app.kubernetes.io/instance"])
		}
	}
	if c.pods == nil {
		c.pods = map[string][]cephDriverPod{}
	}
	for _, d := range drivers {
		c.pods[d] = append(c.pods[d], pod)
	}
}

// firstNonEmpty is the first of s that is not empty.
func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// need records that a volume (index, or -1) or class of in-tree plugin
// inTree needs entry.
func (c *cephConfigInput) need(inTree string, entry ceph.ClusterEntry, volume int, class string) {
	if c.needs == nil {
		c.needs = map[string]map[string]*entryNeed{}
	}
	if c.needs[inTree] == nil {
		c.needs[inTree] = map[string]*entryNeed{}
	}
	n := c.needs[inTree][entry.ClusterID]
	if n == nil {
		n = &entryNeed{entry: entry}
		c.needs[inTree][entry.ClusterID] = n
	}
	if volume >= 0 {
		n.volumes = append(n.volumes, volume)
	}
	if class != "" {
		n.classes = append(n.classes, class)
	}
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

// settle plans the config of each Ceph CSI driver the volumes need (its
// installation with the ceph-csi-operator where absent says the cluster
// has no such driver and the input shows nothing of Ceph CSI), and
// returns the findings that block the volumes and classes whose entry it
// does not serve.
func (c *cephConfigInput) settle(driverOf func(string) string, absent func(driver string) bool, fallbackNS string) ([]CephCSIConfigPlan, map[int]plugin.Finding, map[string]plugin.Finding) {
	var out []CephCSIConfigPlan
	volumes, classes := map[int]plugin.Finding{}, map[string]plugin.Finding{}
	for _, inTree := range []string{plugin.RBDInTreePluginName, plugin.CephFSInTreePluginName} {
		needs := c.needs[inTree]
		if len(needs) == 0 {
			continue
		}
		driver := driverOf(inTree)
		cp := c.locate(driver, fallbackNS)
		if cp.Deployment == "" && absent(driver) && len(c.pods[driver]) == 0 && len(c.operatorDrivers) == 0 && !c.anyConfigMap() {
			cp = CephCSIConfigPlan{Drivers: []string{driver}, Deployment: DeploymentOperator, Namespace: OperatorInstallNamespace,
				ConfigMap: cephCSIConfigMap, Key: cephCSIConfigKey, Install: true}
		}
		// RBD and CephFS of one deployment read one config.
		if i := slices.IndexFunc(out, func(o CephCSIConfigPlan) bool {
			return o.Deployment != "" && o.Reason == "" && cp.Reason == "" && o.Deployment == cp.Deployment && o.Namespace == cp.Namespace && o.ConfigMap == cp.ConfigMap
		}); i >= 0 {
			out[i].Drivers = append(out[i].Drivers, driver)
			cp = out[i]
			out = slices.Delete(out, i, i+1)
		}
		served := map[string]bool{}
		if cp.Reason == "" {
			cp.Entries, served = c.entries(cp), c.served(cp)
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
				f = plugin.Finding{Code: FindingCephCSIConfigNotFound, Severity: plugin.SeverityBlocker, Field: "Ceph CSI config " + driver,
					Message: fmt.Sprintf("where %s reads its cluster entries is not known (%s): whether it serves clusterID %s is not checked", driver, cp.Reason, id),
					Remedy:  "give the driver's DaemonSet and its config map too (kubectl get ds,cm -n <the driver's namespace> -o yaml; with the ceph-csi-operator, its drivers, clientprofiles and cephconnections)",
					Action:  plugin.ActionGiveInput, ActsOn: "CephCSIConfig"}
			default:
				if !slices.ContainsFunc(cp.Missing, func(e ceph.ClusterEntry) bool { return e.ClusterID == id }) {
					cp.Missing = append(cp.Missing, n.entry)
				}
				msg := fmt.Sprintf("%s (%s in %s) has no cluster entry %s (monitors %s): it would not mount the migrated volume", driver, cp.Deployment, cp.Namespace, id, strings.Join(n.entry.Monitors, ","))
				if cp.Install {
					msg = fmt.Sprintf("%s is not installed, and nothing of Ceph CSI's is in the input: installed by the ceph-csi-operator, it needs cluster entry %s (monitors %s) for the migrated volume", driver, id, strings.Join(n.entry.Monitors, ","))
				}
				f = plugin.Finding{Code: FindingCephClusterEntryMissing, Severity: plugin.SeverityBlocker, Field: "ConfigMap " + cp.Namespace + "/" + cp.ConfigMap,
					Message: msg, Remedy: entryRemedy(cp)}
			}
			for _, v := range n.volumes {
				volumes[v] = f
			}
			for _, sc := range n.classes {
				classes[sc] = f
			}
		}
		out = append(out, cp)
	}
	for i := range out {
		if out[i].Reason == "" {
			c.render(&out[i])
		}
	}
	return out, volumes, classes
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

// render gives cp's missing entries in its deployment's form.
func (c *cephConfigInput) render(cp *CephCSIConfigPlan) {
	if len(cp.Missing) == 0 {
		return
	}
	existing := []json.RawMessage{}
	if m := c.maps[cp.Namespace+"/"+cp.ConfigMap]; m != nil && m.Data[cp.Key] != "" {
		if err := json.Unmarshal([]byte(m.Data[cp.Key]), &existing); err != nil {
			existing = nil
		}
	}
	switch cp.Deployment {
	case DeploymentOperator:
		if cp.Install {
			for _, d := range cp.Drivers {
				cp.Objects = append(cp.Objects, &unstructured.Unstructured{Object: map[string]any{"apiVersion": operatorGroup + "/v1", "kind": "Driver",
					"metadata": map[string]any{"name": d, "namespace": cp.Namespace}, "spec": map[string]any{}}})
			}
		}
		for _, e := range cp.Missing {
			conn := &unstructured.Unstructured{Object: map[string]any{"apiVersion": operatorGroup + "/v1", "kind": "CephConnection",
				"metadata": map[string]any{"name": e.ClusterID, "namespace": cp.Namespace},
				"spec":     map[string]any{"monitors": stringsAny(e.Monitors)}}}
			prof := &unstructured.Unstructured{Object: map[string]any{"apiVersion": operatorGroup + "/v1", "kind": clientProfileKind,
				"metadata": map[string]any{"name": e.ClusterID, "namespace": cp.Namespace},
				"spec":     map[string]any{"cephConnectionRef": map[string]any{"name": e.ClusterID}}}}
			cp.Objects = append(cp.Objects, conn, prof)
		}
	case DeploymentHelm:
		all := slices.Clone(existing)
		for _, e := range cp.Missing {
			b, _ := json.Marshal(e)
			all = append(all, b)
		}
		// JSON is YAML: a values file for helm upgrade -f, as it is, an
		// entry a line.
		lines := make([]string, len(all))
		for i, e := range all {
			var b bytes.Buffer
			if json.Compact(&b, e) != nil {
				return
			}
			lines[i] = "  " + b.String()
		}
		cp.HelmValues = "{\"csiConfig\": [\n" + strings.Join(lines, ",\n") + "\n]}"
	default:
		if existing == nil {
			// A map whose key does not parse is not merged into.
			return
		}
		all := slices.Clone(existing)
		for _, e := range cp.Missing {
			b, _ := json.Marshal(e)
			all = append(all, b)
		}
		b, err := json.Marshal(all)
		if err != nil {
			return
		}
		cm := &v1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: cp.ConfigMap, Namespace: cp.Namespace}, Data: map[string]string{cp.Key: string(b)}}
		if m := c.maps[cp.Namespace+"/"+cp.ConfigMap]; m != nil {
			cm.Labels, cm.Annotations = m.Labels, m.Annotations
		}
		cp.ConfigMapMerged = cm
	}
}

func stringsAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// joinDeployments says, for each Ceph volume an adoption makes native,
// which clusterID its volume ID will name (adopt.JoinDeployment): an entry
// of its driver's own deployment where one serves its Ceph cluster, else
// its migration entry.
func (p *Planner) joinDeployments(plan *Plan) []volumeNote {
	var notes []volumeNote
	var fsidOf func([]string) (string, error)
	if readFSID := p.opts.CephFSID; readFSID != nil {
		type read struct {
			fsid string
			err  error
		}
		memo := map[string]read{} // by monitors
		fsidOf = func(mons []string) (string, error) {
			key := strings.Join(mons, ",")
			r, ok := memo[key]
			if !ok {
				r.fsid, r.err = readFSID(mons)
				memo[key] = r
			}
			return r.fsid, r.err
		}
	}
	for _, inTree := range []string{plugin.RBDInTreePluginName, plugin.CephFSInTreePluginName} {
		driver := p.drivers.driverName(inTree)
		i := slices.IndexFunc(plan.CephCSIConfig, func(cp CephCSIConfigPlan) bool { return cp.Reason == "" && slices.Contains(cp.Drivers, driver) })
		var cfg ceph.ClusterConfig
		if i >= 0 {
			cfg = ceph.NewClusterConfig(plan.CephCSIConfig[i].Entries...)
		}
		needs := p.cephConfig.needs[inTree]
		for _, id := range slices.Sorted(maps.Keys(needs)) {
			n := needs[id]
			for _, vi := range n.volumes {
				if plan.Volumes[vi].Form != string(adopt.FormNative) {
					continue
				}
				own := id
				if inTree == plugin.CephFSInTreePluginName {
					own = ceph.CephFSGroupEntry(n.entry, p.groups[vi]).ClusterID
				}
				in := adopt.JoinInput{Backend: inTree, Group: p.groups[vi], Config: cfg, FSIDOf: fsidOf}
				var readErr error
				if fsidOf != nil {
					in.FSID, readErr = fsidOf(n.entry.Monitors)
				}
				j := adopt.JoinDeployment(in)
				n := volumeNote{volume: vi, adoptClusterID: own}
				switch {
				case j.ClusterID != "":
					n.adoptClusterID = j.ClusterID
					n.formWhy = append(n.formWhy, fmt.Sprintf("adopted, its volume ID names clusterID %s, the entry of %s's deployment for the same Ceph cluster (same fsid): a volume of that deployment, which needs no migration entry afterwards", j.ClusterID, driver))
				case len(j.Unread) > 0:
					n.formWhy = append(n.formWhy, fmt.Sprintf("adopted, its volume ID names clusterID %s of %s's deployment if that entry's monitors reach the same Ceph cluster (the adoption compares fsids), else the migration entry %s", j.Unread[0], driver, own))
				case readErr != nil:
					n.formWhy = append(n.formWhy, fmt.Sprintf("adopted, its volume ID names the migration entry %s: the volume's Ceph cluster was not read (%v)", own, readErr))
				case len(j.Why) > 0:
					n.formWhy = append(n.formWhy, fmt.Sprintf("adopted, its volume ID names the migration entry %s: no entry of %s's deployment serves it (%s)", own, driver, strings.Join(j.Why, "; ")))
				}
				notes = append(notes, n)
			}
		}
	}
	return notes
}

// settleCephConfig plans where each Ceph CSI driver reads its cluster
// entries, and blocks the volumes and classes whose entry it does not
// serve yet (or, where the input does not show its config, whose entry is
// not checked). Which clusterID adopted volumes name, and which volumes
// it blocks, it returns.
func (p *Planner) settleCephConfig(plan *Plan) []volumeNote {
	configs, volumes, classes := p.cephConfig.settle(p.drivers.driverName, p.drivers.absent, p.opts.CephCSINamespace)
	plan.CephCSIConfig = configs
	notes := p.joinDeployments(plan)
	for _, i := range slices.Sorted(maps.Keys(volumes)) {
		notes = append(notes, blockedBy(i, volumes[i]))
	}
	for _, name := range slices.Sorted(maps.Keys(classes)) {
		if i := slices.IndexFunc(plan.StorageClasses, func(s StorageClassPlan) bool { return s.Name == name }); i >= 0 && plan.StorageClasses[i].Migratable {
			f := classes[name]
			p.classBlocked(name, f.Message+"; "+f.Remedy)
		}
	}
	return notes
}

package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
	"github.com/csimigrate/csimigrate/rewrite"
)

// Finding codes of the drivers a cluster has.
const (
	// FindingCSIDriverMissing: no CSI driver of the volume's backend is
	// installed (no CSIDriver object of its name), or not the one chosen.
	FindingCSIDriverMissing = string(rewrite.CodeCSIDriverMissing)
	// FindingCSIDriverAmbiguous: two or more drivers of the backend are
	// installed and none was chosen.
	FindingCSIDriverAmbiguous = "CSIDriverAmbiguous"
	// FindingCSIDriversNotChecked: the input has no CSIDriver objects.
	FindingCSIDriversNotChecked = "CSIDriversNotChecked"
	// FindingNodePluginMissing: a node that runs the volume's pods has no
	// node plugin of the driver registered (its CSINode).
	FindingNodePluginMissing = string(rewrite.CodeCSINodeDriverMissing)
)

// clusterDrivers are the CSI drivers of the input (CSIDriver objects) and
// the nodes their node plugins are registered on (CSINodes), and which
// driver each in-tree plugin's volumes go to.
type clusterDrivers struct {
	// installed are the CSIDrivers' names.
	installed []string
	// chosen are Options.Drivers.
	chosen map[string]string
	// onNode are the drivers each CSINode registers, by node name.
	onNode map[string][]string
	// vsphereKeys are the topology keys the vSphere driver reports, by
	// node (CSINodes that register it).
	vsphereKeys      map[string][]string
	sawCSIDrivers    bool
	resolved         bool
	choices          []DriverChoice
	notCheckedPlugin map[string]bool
}

// add reads a CSIDriver or a CSINode; false for other objects.
func (d *clusterDrivers) add(obj any) bool {
	switch o := obj.(type) {
	case *storagev1.CSIDriver:
		d.sawCSIDrivers = true
		d.installed = append(d.installed, o.Name)
	case *storagev1.CSINode:
		if d.onNode == nil {
			d.onNode, d.vsphereKeys = map[string][]string{}, map[string][]string{}
		}
		for _, dr := range o.Spec.Drivers {
			d.onNode[o.Name] = append(d.onNode[o.Name], dr.Name)
			if plugin.InTreeNameOfDriver(dr.Name) == vsphere.PluginName {
				d.vsphereKeys[o.Name] = dr.TopologyKeys
			}
		}
	default:
		return false
	}
	return true
}

// driverName is the driver an in-tree plugin's volumes go to (once the
// drivers are resolved; its upstream name before).
func (d *clusterDrivers) driverName(inTree string) string {
	for _, c := range d.choices {
		if c.InTree == inTree {
			return c.Driver
		}
	}
	return plugin.UpstreamDriverName(inTree)
}

// absent reports whether the input's CSIDrivers were read and none is
// driver: the cluster does not run it.
func (d *clusterDrivers) absent(driver string) bool {
	return d.sawCSIDrivers && !slices.Contains(d.installed, driver)
}

// DriverChoice is the CSI driver an in-tree plugin's volumes go to on a
// cluster, and the blocker that keeps them from it (nil for none).
type DriverChoice struct {
	InTree, Driver string
	Blocker        *plugin.Finding
}

// ChooseDrivers decides, for each in-tree plugin this module translates,
// which CSI driver its volumes go to on a cluster whose CSIDriver objects
// are named installed (read: whether they were read at all; without them
// the upstream names are assumed and nothing is blocked here): the one
// chosen by the administrator (chosen, by in-tree plugin name), else the
// one installed driver of the backend (plugin.InTreeNameOfDriver). A
// backend with no driver, with a chosen one not installed, or with two and
// none chosen has a blocker. The rule of the plan, rewrite and apply.
func ChooseDrivers(installed []string, read bool, chosen map[string]string) []DriverChoice {
	byPlugin := map[string][]string{}
	for _, n := range installed {
		if inTree := plugin.InTreeNameOfDriver(n); inTree != "" && !slices.Contains(byPlugin[inTree], n) {
			byPlugin[inTree] = append(byPlugin[inTree], n)
		}
	}
	var out []DriverChoice
	for _, inTree := range []string{plugin.RBDInTreePluginName, plugin.CephFSInTreePluginName, plugin.VSphereInTreePluginName} {
		names := slices.Sorted(slices.Values(byPlugin[inTree]))
		upstream := plugin.UpstreamDriverName(inTree)
		c := DriverChoice{InTree: inTree, Driver: upstream}
		switch want := chosen[inTree]; {
		case want != "":
			c.Driver = want
			if read && !slices.Contains(names, want) {
				c.Blocker = &plugin.Finding{Code: FindingCSIDriverMissing, Severity: plugin.SeverityBlocker, Field: "CSIDriver " + want,
					Message: fmt.Sprintf("the driver chosen for %s volumes, %s, is not installed (installed: %s): nothing would serve them", inTree, want, orNone(names)),
					Remedy:  "install it, or choose one of the installed drivers"}
			}
		case !read:
		case len(names) == 1:
			c.Driver = names[0]
		case len(names) == 0:
			c.Blocker = &plugin.Finding{Code: FindingCSIDriverMissing, Severity: plugin.SeverityBlocker, Field: "CSIDriver " + upstream,
				Message: fmt.Sprintf("no CSI driver for %s volumes is installed (no CSIDriver named %s, or with a prefix as Rook's rook-ceph.%s): nothing would mount them", inTree, upstream, upstream),
				Remedy:  "install the driver first (kubectl get csidrivers lists what is installed), then plan again"}
		default:
			c.Blocker = &plugin.Finding{Code: FindingCSIDriverAmbiguous, Severity: plugin.SeverityBlocker, Field: "CSIDriver " + strings.Join(names, ", "),
				Message: fmt.Sprintf("%d drivers for %s volumes are installed (%s): which one serves the migrated volumes is a choice to make, not to guess", len(names), inTree, strings.Join(names, ", ")),
				Remedy:  "choose the driver the migrated volumes use", Action: plugin.ActionChooseDriver, ActsOn: inTree}
		}
		out = append(out, c)
	}
	return out
}

// DriverNames are the choices' driver names that differ from the upstream
// ones, for translate.Translator.WithDriverNames.
func DriverNames(choices []DriverChoice) map[string]string {
	out := map[string]string{}
	for _, c := range choices {
		if c.Driver != plugin.UpstreamDriverName(c.InTree) {
			out[c.InTree] = c.Driver
		}
	}
	return out
}

// resolve decides, once every CSIDriver is read, which driver each
// in-tree plugin of this module goes to (ChooseDrivers).
func (d *clusterDrivers) resolve() {
	if d.resolved {
		return
	}
	d.resolved = true
	d.choices = ChooseDrivers(d.installed, d.sawCSIDrivers, d.chosen)
}

// check is the finding that blocks a volume of in-tree plugin inTree for
// want of its driver, nil where it is installed; notChecked records that
// the input had no CSIDrivers to tell.
func (d *clusterDrivers) check(inTree string) *plugin.Finding {
	d.resolve()
	if !d.sawCSIDrivers {
		if d.notCheckedPlugin == nil {
			d.notCheckedPlugin = map[string]bool{}
		}
		d.notCheckedPlugin[inTree] = true
		return &plugin.Finding{Code: FindingCSIDriversNotChecked, Severity: plugin.SeverityBlocker, Field: "CSIDriver",
			Message: "the input has no CSIDrivers: whether " + d.driverName(inTree) + " (or a driver of another name for " + inTree + ") is installed is not checked",
			Remedy:  reasonCSIDriversRemedy, Action: plugin.ActionGiveInput, ActsOn: "CSIDrivers"}
	}
	for _, c := range d.choices {
		if c.InTree == inTree {
			return c.Blocker
		}
	}
	return nil
}

const reasonCSIDriversRemedy = "give the CSIDrivers and CSINodes too: kubectl get csidrivers,csinodes -o yaml, or read them from the cluster"

// notChecked is the cluster-wide hazard of an input without CSIDrivers,
// nil when it had them or no volume needed them.
func (d *clusterDrivers) notChecked() *plugin.Finding {
	if len(d.notCheckedPlugin) == 0 {
		return nil
	}
	return &plugin.Finding{Code: FindingCSIDriversNotChecked, Severity: plugin.SeverityBlocker, Field: "CSIDriver",
		Message: "the input has no CSIDrivers: whether the drivers of " + strings.Join(slices.Sorted(maps.Keys(d.notCheckedPlugin)), ", ") +
			" volumes are installed, and under which names, is not checked",
		Remedy: reasonCSIDriversRemedy, Action: plugin.ActionGiveInput, ActsOn: "CSIDrivers"}
}

// nodePluginMissing are the findings of the nodes, among those the pods
// of a volume run on, whose CSINode registers no node plugin of driver;
// none when the input has no CSINodes.
func (d *clusterDrivers) nodePluginMissing(driver string, pods []string, nodeOf map[string]string) []plugin.Finding {
	if d.onNode == nil {
		return nil
	}
	var missing []string
	for _, pod := range pods {
		node := nodeOf[pod]
		if node == "" || slices.Contains(d.onNode[node], driver) || slices.Contains(missing, node) {
			continue
		}
		missing = append(missing, node)
	}
	if len(missing) == 0 {
		return nil
	}
	return []plugin.Finding{{Code: FindingNodePluginMissing, Severity: plugin.SeverityBlocker, Field: "CSINode " + strings.Join(missing, ", "),
		Message: fmt.Sprintf("the node plugin of %s is not registered on node(s) %s, where the volume's pods run: it would not mount there", driver, strings.Join(missing, ", ")),
		Remedy:  "run the driver's node plugin on those nodes (its DaemonSet's node selector and tolerations), or move the pods to nodes that run it"}}
}

// topologyFindings judge a migrated vSphere PV's node affinity against
// the topology keys the vSphere driver reports on the nodes: a blocker
// when no node reports every key the translation wrote (the volume would
// schedule nowhere), a warning naming the nodes that do not.
func (d *clusterDrivers) topologyFindings(out *v1.PersistentVolume, keys []string) []plugin.Finding {
	used := writtenKeys(out, keys)
	if len(used) == 0 || d.vsphereKeys == nil {
		return nil
	}
	var lacking []string
	for _, node := range slices.Sorted(maps.Keys(d.vsphereKeys)) {
		for _, k := range used {
			if !slices.Contains(d.vsphereKeys[node], k) {
				lacking = append(lacking, fmt.Sprintf("%s reports %v", node, d.vsphereKeys[node]))
				break
			}
		}
	}
	switch {
	case len(lacking) == 0:
		return nil
	case len(lacking) == len(d.vsphereKeys):
		return []plugin.Finding{{Code: vsphere.FindingTopologyKeyUnused, Severity: plugin.SeverityBlocker, Field: "spec.nodeAffinity",
			Message: fmt.Sprintf("the migrated PV's node affinity uses topology keys %v, which the vSphere CSI driver reports on no node (%s): its pods would not schedule", used, strings.Join(first(lacking, 3), "; ")),
			Remedy:  "translate with the topology keys of the driver's [Labels] topology-categories (or the beta failure-domain labels it reports)", Action: plugin.ActionSetVSphereTopology}}
	}
	return []plugin.Finding{{Code: vsphere.FindingTopologyKeyUnused, Severity: plugin.SeverityWarning, Field: "spec.nodeAffinity",
		Message: fmt.Sprintf("the migrated PV's node affinity uses topology keys %v, which the vSphere CSI driver does not report on %d node(s) (%s): its pods will not schedule there", used, len(lacking), strings.Join(first(lacking, 3), "; ")),
		Remedy:  "configure the driver's topology on those nodes, or keep the pods off them"}}
}

// writtenKeys are the keys among keys that out's required node affinity
// names.
func writtenKeys(out *v1.PersistentVolume, keys []string) []string {
	if out == nil || out.Spec.NodeAffinity == nil || out.Spec.NodeAffinity.Required == nil {
		return nil
	}
	var used []string
	for _, term := range out.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if slices.Contains(keys, e.Key) && !slices.Contains(used, e.Key) {
				used = append(used, e.Key)
			}
		}
	}
	return used
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

package plan

import (
	"encoding/json"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/rewrite"
)

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
	volumes []string // by PV name
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

// need records that a volume (its PV's name, or "") or class of in-tree
// plugin inTree needs entry.
func (c *cephConfigInput) need(inTree string, entry ceph.ClusterEntry, volume, class string) {
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
	if volume != "" {
		n.volumes = append(n.volumes, volume)
	}
	if class != "" {
		n.classes = append(n.classes, class)
	}
}

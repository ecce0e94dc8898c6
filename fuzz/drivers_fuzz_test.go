package fuzz

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	storage "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/translate"
)

// FuzzChooseDrivers: any CSIDriver names and choice give each backend one
// driver of its family (or its upstream name), the one installed driver
// where there is one and no choice, a blocker where there are two, and
// names a translator takes or refuses with ErrDriverName, never a panic.
func FuzzChooseDrivers(f *testing.F) {
	f.Add("rook-ceph.rbd.csi.ceph.com\ncephfs.csi.ceph.com", "", true)
	f.Add("rbd.csi.ceph.com\nx.rbd.csi.ceph.com", "x.rbd.csi.ceph.com", true)
	f.Add("", ".rbd.csi.ceph.com", false)
	f.Fuzz(func(t *testing.T, names, chosen string, read bool) {
		installed := strings.Split(names, "\n")
		var choice map[string]string
		if chosen != "" {
			choice = map[string]string{plugin.RBDInTreePluginName: chosen}
		}
		for _, c := range plan.ChooseDrivers(installed, read, choice) {
			var family []string
			for _, n := range installed {
				if plugin.InTreeNameOfDriver(n) == c.InTree && !slices.Contains(family, n) {
					family = append(family, n)
				}
			}
			switch {
			case choice[c.InTree] != "":
				if c.Driver != chosen || (c.Blocker != nil) != (read && !slices.Contains(family, chosen)) {
					t.Fatalf("%s: chose %q (blocker %v) for %q among %q", c.InTree, c.Driver, c.Blocker, chosen, family)
				}
			case !read:
				if c.Driver != plugin.UpstreamDriverName(c.InTree) || c.Blocker != nil {
					t.Fatalf("%s: %q %v without CSIDrivers", c.InTree, c.Driver, c.Blocker)
				}
			case len(family) == 1:
				if c.Driver != family[0] || c.Blocker != nil {
					t.Fatalf("%s: %q %v, want %q", c.InTree, c.Driver, c.Blocker, family[0])
				}
			default:
				if c.Blocker == nil || c.Blocker.Severity != plugin.SeverityBlocker {
					t.Fatalf("%s: no blocker among %q", c.InTree, family)
				}
			}
		}
		tr, err := translate.New()
		if err != nil {
			t.Fatal(err)
		}
		renamed, err := tr.WithDriverNames(plan.DriverNames(plan.ChooseDrivers(installed, read, choice)))
		if err == nil {
			for _, c := range plan.ChooseDrivers(installed, read, choice) {
				if d, _ := renamed.GetCSINameFromInTreeName(c.InTree); d != c.Driver {
					t.Fatalf("%s: translator of %q, chosen %q", c.InTree, d, c.Driver)
				}
			}
		} else if plugin.InTreeNameOfDriver(chosen) == plugin.RBDInTreePluginName && len(chosen) <= 63 {
			t.Fatalf("a driver name of the family refused: %q: %v", chosen, err)
		}
	})
}

// FuzzPlanCephConfig: any config map content, driver name and map name
// give a plan that never calls a volume ready whose entry the map does not
// serve, and whose merged map keeps every entry the map had, as it was.
func FuzzPlanCephConfig(f *testing.F) {
	f.Add(plugin.RBDDriverName, "ceph-csi-config", `[{"clusterID":"own","monitors":["10.9.9.9:6789"],"x":1}]`, "10.70.53.126:6789", true)
	f.Add("rook-ceph.rbd.csi.ceph.com", "rook-ceph-csi-config", `[{"clusterID":"b7f67366bb43f32e07d8a261a7840da9","monitors":["10.70.53.126:6789"]}]`, "10.70.53.126:6789", false)
	f.Add(plugin.RBDDriverName, "ceph-csi-config", `{}`, "", true)
	f.Fuzz(func(t *testing.T, driver, mapName, config, monitor string, pod bool) {
		tr, err := translate.New()
		if err != nil {
			t.Fatal(err)
		}
		p := plan.New(tr, logger, plan.Options{})
		p.Add(&storage.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driver}})
		key := "config.json"
		if mapName == "rook-ceph-csi-config" {
			key = "csi-cluster-config-json"
		}
		p.Add(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: mapName}, Data: map[string]string{key: config}})
		if pod {
			p.Add(&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plugin"}, Spec: appsv1.DaemonSetSpec{Template: v1.PodTemplateSpec{Spec: v1.PodSpec{
				Containers: []v1.Container{{Name: "c", Args: []string{"--drivername=" + driver}}},
				Volumes:    []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: mapName}}}}}}}}})
		}
		p.Add(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "s"}, Data: map[string][]byte{"key": []byte("k")}})
		pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: v1.PersistentVolumeSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{monitor}, RBDImage: "img", RBDPool: "rbd",
				SecretRef: &v1.SecretReference{Name: "s", Namespace: "n"}}}}}
		p.Add(pv)
		r := p.Finish()
		var served []ceph.ClusterEntry
		_ = json.Unmarshal([]byte(config), &served)
		id := ""
		if len(r.CephClusters) > 0 {
			id = r.CephClusters[0].ClusterID
		}
		if len(r.Volumes) == 1 && r.Volumes[0].Migratable {
			if plugin.InTreeNameOfDriver(driver) != plugin.RBDInTreePluginName {
				t.Fatalf("ready with driver %q", driver)
			}
			if !slices.ContainsFunc(served, func(e ceph.ClusterEntry) bool { return e.ClusterID == id && len(e.Monitors) > 0 }) {
				t.Fatalf("ready, but the map %q does not serve %s", config, id)
			}
		}
		for _, c := range r.CephCSIConfig {
			if c.ConfigMapMerged == nil {
				continue
			}
			var had, merged []json.RawMessage
			if json.Unmarshal([]byte(config), &had) != nil {
				t.Fatalf("a map merged into one that does not parse: %q", config)
			}
			if err := json.Unmarshal([]byte(c.ConfigMapMerged.Data[c.Key]), &merged); err != nil || len(merged) < len(had) {
				t.Fatalf("merged %q: %v", c.ConfigMapMerged.Data[c.Key], err)
			}
			for i := range had {
				var a, b any
				_ = json.Unmarshal(had[i], &a)
				_ = json.Unmarshal(merged[i], &b)
				ja, _ := json.Marshal(a)
				jb, _ := json.Marshal(b)
				if string(ja) != string(jb) {
					t.Fatalf("entry %d changed: %s -> %s", i, had[i], merged[i])
				}
			}
		}
	})
}

package plan_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/translate"
)

// nodePlugin is a Ceph CSI node plugin DaemonSet running driver and
// mounting configMap (key as config.json; "" for the whole map).
func nodePlugin(ns, driver, configMap, key string, labels map[string]string) *appsv1.DaemonSet {
	vol := v1.Volume{Name: "ceph-csi-config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: configMap}}}}
	if key != "" {
		vol.ConfigMap.Items = []v1.KeyToPath{{Key: key, Path: "config.json"}}
	}
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "csi-rbdplugin", Labels: labels},
		Spec: appsv1.DaemonSetSpec{Template: v1.PodTemplateSpec{Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "csi-rbdplugin", Args: []string{"--nodeid=$(NODE_ID)", "--type=rbd", "--nodeserver=true", "--drivername=" + driver}}},
			Volumes:    []v1.Volume{vol}}}}}
}

func configMap(ns, name, key, value string, ann map[string]string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann}, Data: map[string]string{key: value}}
}

func operatorObject(kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "csi.ceph.io/v1", "kind": kind,
		"metadata": map[string]any{"namespace": ns, "name": name}, "spec": spec}}
}

// The entry a migrated volume needs is looked for where its driver reads
// it, as the deployment shows it, and given in the form that lasts there:
// Helm's csiConfig value, the plain map merged, Rook's map without a
// namespace field, the operator's ClientProfile and CephConnection.
func TestPlanCephConfigDeployments(t *testing.T) {
	id := ceph.EntryFor([]string{testMonitor}).ClusterID
	own := `{"clusterID":"5b6f0a4c-7e1d-4b0e-9a61-2b0c1d9a7e11","monitors":["10.1.0.1:6789"],"cephFS":{"netNamespaceFilePath":""}}`
	rookOwn := `{"clusterID":"rook-ceph","monitors":["10.1.0.1:6789"],"namespace":"rook-ceph"}`
	mine := `{"clusterID":"` + id + `","monitors":["` + testMonitor + `"]}`
	helm := map[string]string{"app.kubernetes.io/managed-by": "Helm", "release": "ceph-csi-rbd"}
	ownerRef := map[string]string{"csi.ceph.io/ownerref": `{"apiVersion":"csi.ceph.io/v1","kind":"Driver","namespace":"rook-ceph","name":"rook-ceph.rbd.csi.ceph.com"}`}
	for _, tc := range []struct {
		name       string
		objs       []any
		deployment string
		code       string // the volume's finding, "" when the entry is served
		check      func(t *testing.T, c plan.CephCSIConfigPlan)
	}{
		{"helm", []any{csiDriver(plugin.RBDDriverName), nodePlugin("ceph-csi-rbd", plugin.RBDDriverName, "ceph-csi-config", "", helm),
			configMap("ceph-csi-rbd", "ceph-csi-config", "config.json", "["+own+"]", map[string]string{"meta.helm.sh/release-name": "ceph-csi-rbd"})},
			plan.DeploymentHelm, plan.FindingCephClusterEntryMissing, func(t *testing.T, c plan.CephCSIConfigPlan) {
				var v struct{ CSIConfig []json.RawMessage }
				err := json.Unmarshal([]byte(c.HelmValues), &v)
				var first bytes.Buffer
				if err == nil && len(v.CSIConfig) == 2 {
					err = json.Compact(&first, v.CSIConfig[0])
				}
				if err != nil || len(v.CSIConfig) != 2 || first.String() != own || !strings.Contains(string(v.CSIConfig[1]), id) {
					t.Errorf("csiConfig value %s (%v): want the release's entry and %s", c.HelmValues, err, id)
				}
				if c.HelmRelease != "ceph-csi-rbd" || c.Namespace != "ceph-csi-rbd" || c.ConfigMapMerged != nil {
					t.Errorf("%+v", c)
				}
			}},
		{"helm, served", []any{csiDriver(plugin.RBDDriverName), nodePlugin("ceph-csi-rbd", plugin.RBDDriverName, "ceph-csi-config", "", helm),
			configMap("ceph-csi-rbd", "ceph-csi-config", "config.json", "["+own+","+mine+"]", nil)}, plan.DeploymentHelm, "", nil},
		{"manifests", []any{csiDriver(plugin.RBDDriverName), nodePlugin("ceph-csi", plugin.RBDDriverName, "ceph-csi-config", "", nil),
			configMap("ceph-csi", "ceph-csi-config", "config.json", "["+own+"]", nil)},
			plan.DeploymentManifests, plan.FindingCephClusterEntryMissing, func(t *testing.T, c plan.CephCSIConfigPlan) {
				if c.ConfigMapMerged == nil || !strings.HasPrefix(c.ConfigMapMerged.Data["config.json"], "["+own+",") || !strings.Contains(c.ConfigMapMerged.Data["config.json"], id) {
					t.Errorf("merged map %+v: want %s kept as it is and %s added", c.ConfigMapMerged, own, id)
				}
			}},
		{"rook 1.17", []any{csiDriver(rookRBD), nodePlugin("rook-ceph", rookRBD, "rook-ceph-csi-config", "csi-cluster-config-json", nil),
			configMap("rook-ceph", "rook-ceph-csi-config", "csi-cluster-config-json", "["+rookOwn+"]", nil)},
			plan.DeploymentRook, plan.FindingCephClusterEntryMissing, func(t *testing.T, c plan.CephCSIConfigPlan) {
				got := c.ConfigMapMerged.Data["csi-cluster-config-json"]
				var entries []map[string]any
				if err := json.Unmarshal([]byte(got), &entries); err != nil || len(entries) != 2 || !strings.HasPrefix(got, "["+rookOwn+",") {
					t.Fatalf("merged %s: want Rook's entry kept and one added", got)
				}
				if _, ns := entries[1]["namespace"]; ns || entries[1]["clusterID"] != id {
					t.Errorf("added entry %v: want %s without a namespace field (Rook would take it for its own)", entries[1], id)
				}
			}},
		{"ceph-csi-operator", []any{&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: rookRBD, Annotations: ownerRef}},
			configMap("rook-ceph", "ceph-csi-config", "config.json", `[{"clusterID":"rook-ceph","monitors":["10.1.0.1:6789"]}]`, nil)},
			plan.DeploymentOperator, plan.FindingCephClusterEntryMissing, func(t *testing.T, c plan.CephCSIConfigPlan) {
				var kinds []string
				for _, o := range c.Objects {
					kinds = append(kinds, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
				}
				if want := []string{"CephConnection rook-ceph/" + id, "ClientProfile rook-ceph/" + id}; !slices.Equal(kinds, want) {
					t.Errorf("objects %v, want %v", kinds, want)
				}
				if ref, _, _ := unstructured.NestedString(c.Objects[1].Object, "spec", "cephConnectionRef", "name"); ref != id {
					t.Errorf("ClientProfile names CephConnection %q", ref)
				}
			}},
		{"ceph-csi-operator, served by a ClientProfile", []any{csiDriver(rookRBD), operatorObject("Driver", "rook-ceph", rookRBD, map[string]any{}),
			operatorObject("ClientProfile", "rook-ceph", id, map[string]any{"cephConnectionRef": map[string]any{"name": "conn"}}),
			operatorObject("CephConnection", "rook-ceph", "conn", map[string]any{"monitors": []any{testMonitor}})}, plan.DeploymentOperator, "", nil},
		{"nothing shows it", []any{csiDriver(plugin.RBDDriverName)}, "", plan.FindingCephCSIConfigNotFound, nil},
		{"the mounted map is not in the input", []any{csiDriver(plugin.RBDDriverName), nodePlugin("ceph-csi", plugin.RBDDriverName, "ceph-csi-config", "", nil)},
			plan.DeploymentManifests, plan.FindingCephCSIConfigNotFound, func(t *testing.T, c plan.CephCSIConfigPlan) {
				if c.ConfigMapMerged != nil {
					t.Errorf("a map made without the one the driver reads: %+v", c.ConfigMapMerged)
				}
			}},
		{"two maps, no pod", []any{csiDriver(plugin.RBDDriverName), configMap("a", "ceph-csi-config", "config.json", "[]", nil),
			configMap("b", "ceph-csi-config", "config.json", "[]", nil)}, "", plan.FindingCephCSIConfigNotFound, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := append(slices.Clone(tc.objs), secret("admin", "key", "x"), rbdPV("a", "admin", "admin"))
			r := driverPlan(t, plan.Options{}, objs...)
			if len(r.CephCSIConfig) != 1 {
				t.Fatalf("Ceph CSI config %+v", r.CephCSIConfig)
			}
			c := r.CephCSIConfig[0]
			if c.Deployment != tc.deployment {
				t.Errorf("deployment %q, want %q (%s)", c.Deployment, tc.deployment, c.Reason)
			}
			got := ""
			for _, f := range r.Volumes[0].Findings {
				if f.Code == plan.FindingCephClusterEntryMissing || f.Code == plan.FindingCephCSIConfigNotFound {
					got = f.Code
				}
			}
			if got != tc.code || r.Volumes[0].Migratable != (tc.code == "") {
				t.Errorf("finding %q, migratable %v: want %q (%+v)", got, r.Volumes[0].Migratable, tc.code, r.Volumes[0].Findings)
			}
			if tc.code == "" && !slices.Contains(c.Served, id) {
				t.Errorf("served %v, want %s", c.Served, id)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
	// The namespace the administrator names picks one of two maps.
	r := driverPlan(t, plan.Options{CephCSINamespace: "b"}, csiDriver(plugin.RBDDriverName), configMap("a", "ceph-csi-config", "config.json", "[]", nil),
		configMap("b", "ceph-csi-config", "config.json", "["+mine+"]", nil), secret("admin", "key", "x"), rbdPV("a", "admin", "admin"))
	if !r.Volumes[0].Migratable || r.CephCSIConfig[0].Namespace != "b" {
		t.Errorf("with the namespace named: %+v %+v", r.Volumes[0], r.CephCSIConfig)
	}
}

// An adopted volume's ID names the deployment's own entry where its
// monitors reach the volume's Ceph cluster (Rook's "rook-ceph", with one
// monitor of another address), else the migration entry; without Ceph
// read, the plan names the candidate.
func TestPlanAdoptJoinsDeployment(t *testing.T) {
	id := ceph.EntryFor([]string{testMonitor}).ClusterID
	rookOwn := `{"clusterID":"rook-ceph","monitors":["10.1.0.1:6789"],"namespace":"rook-ceph"}`
	mine := `{"clusterID":"` + id + `","monitors":["` + testMonitor + `"]}`
	objs := []any{csiDriver(rookRBD), nodePlugin("rook-ceph", rookRBD, "rook-ceph-csi-config", "csi-cluster-config-json", nil),
		configMap("rook-ceph", "rook-ceph-csi-config", "csi-cluster-config-json", "["+rookOwn+","+mine+"]", nil),
		secret("admin", "key", "x"), rbdPV("a", "admin", "admin")}
	clusters := func(other string) func([]string) (string, error) {
		return func(mons []string) (string, error) {
			if slices.Equal(mons, []string{testMonitor}) {
				return "fsid-a", nil
			}
			return other, nil
		}
	}
	for _, tc := range []struct {
		name string
		read func([]string) (string, error)
		want string
		why  string
	}{
		{"the same cluster", clusters("fsid-a"), "rook-ceph", "the entry of " + rookRBD + "'s deployment for the same Ceph cluster"},
		{"another cluster", clusters("fsid-b"), id, "entry rook-ceph: its monitors reach Ceph cluster fsid-b, the volume is on fsid-a"},
		{"Ceph not read", nil, id, "names clusterID rook-ceph of " + rookRBD + "'s deployment if that entry's monitors reach the same Ceph cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := driverPlan(t, plan.Options{CephFSID: tc.read}, objs...)
			v := r.Volumes[0]
			if v.Form != "native" || v.AdoptClusterID != tc.want || !strings.Contains(strings.Join(v.FormWhy, "\n"), tc.why) {
				t.Errorf("form %s, adoption's clusterID %q, want %q; why:\n%s\nwant a line with %q", v.Form, v.AdoptClusterID, tc.want, strings.Join(v.FormWhy, "\n"), tc.why)
			}
			if !v.Migratable {
				t.Errorf("not migratable: %+v", v.Findings)
			}
		})
	}
}

// Without Ceph CSI (the input's CSIDrivers have none of it, and nothing of
// its config is in the input) the plan is its installation with the
// ceph-csi-operator; an input that shows any config map of Ceph CSI's, or
// no CSIDrivers at all, is not taken as a cluster without it.
func TestPlanInstallsCephCSIWithOperator(t *testing.T) {
	pv := rbdPV("data", "admin", "admin")
	vsphere := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: plugin.VSphereDriverName}}
	for _, tc := range []struct {
		name    string
		objs    []any
		install bool
	}{
		{"no Ceph CSI", []any{vsphere, secret("admin", "key", "AQBs3cr3t"), pv}, true},
		{"a config map of Ceph CSI", []any{vsphere, cephConfig(testMonitor), secret("admin", "key", "AQBs3cr3t"), pv}, false},
		{"no CSIDrivers in the input", []any{secret("admin", "key", "AQBs3cr3t"), pv}, false},
	} {
		tr, err := translate.New()
		if err != nil {
			t.Fatal(err)
		}
		p := plan.New(tr, logger, plan.Options{})
		for _, o := range tc.objs {
			p.Add(o)
		}
		got := p.Finish()
		if len(got.CephCSIConfig) != 1 {
			t.Fatalf("%s: %+v", tc.name, got.CephCSIConfig)
		}
		cfg := got.CephCSIConfig[0]
		if cfg.Install != tc.install {
			t.Errorf("%s: install %v, want %v (%+v)", tc.name, cfg.Install, tc.install, cfg)
		}
		if !tc.install {
			continue
		}
		var kinds []string
		for _, o := range cfg.Objects {
			kinds = append(kinds, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
		}
		id := ceph.EntryFor([]string{testMonitor}).ClusterID
		want := []string{"Driver/" + plan.OperatorInstallNamespace + "/" + plugin.RBDDriverName, "CephConnection/" + plan.OperatorInstallNamespace + "/" + id, "ClientProfile/" + plan.OperatorInstallNamespace + "/" + id}
		if !slices.Equal(kinds, want) || cfg.Deployment != plan.DeploymentOperator || len(cfg.Missing) != 1 || !got.Blocked {
			t.Errorf("%s: objects %v, want %v (%+v)", tc.name, kinds, want, cfg)
		}
	}
}

package cephtest

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/translate"
)

// The deployments of Ceph CSI's RBD driver the oracle draws.
var deploymentForms = []string{plan.DeploymentHelm, plan.DeploymentManifests, plan.DeploymentRook, plan.DeploymentOperator}

// deploymentCase is one drawn deployment of Ceph CSI's RBD driver and the
// state of the migration entry in what it reads.
type deploymentCase struct {
	Form      string
	Driver    string
	Namespace string
	// Registered: the driver runs (its CSIDriver and its node plugin
	// exist); otherwise the cluster has none, only its leftover map.
	Registered bool
	// Pods: the node plugin's DaemonSet is in the input.
	Pods bool
	// Entry is the migration entry in the config the driver reads:
	// "present", "missing" or "no-monitors".
	Entry string
	// Profile (operator): the entry comes from a ClientProfile and
	// CephConnection the operator rendered, not appended to its map.
	Profile bool
	// Decoy: a stale ceph-csi-config elsewhere holds the entry.
	Decoy bool
}

func (dc deploymentCase) String() string {
	return fmt.Sprintf("%s in %s as %s (registered %t, pods %t, entry %s, profile %t, decoy %t)", dc.Form, dc.Namespace, dc.Driver,
		dc.Registered, dc.Pods, dc.Entry, dc.Profile, dc.Decoy)
}

// drawDeployment draws a deployment of form; entry "" draws the entry's
// state too.
func drawDeployment(t *rapid.T, form, entry string) deploymentCase {
	dc := deploymentCase{Form: form, Entry: entry, Registered: rapid.Float64Range(0, 1).Draw(t, "registered") < 0.85,
		Pods: rapid.Bool().Draw(t, "pods"), Decoy: rapid.Float64Range(0, 1).Draw(t, "decoy") < 0.3}
	if dc.Entry == "" {
		dc.Entry = rapid.SampledFrom([]string{"missing", "no-monitors"}).Draw(t, "entry")
	}
	switch form {
	case plan.DeploymentHelm:
		dc.Namespace = "ceph-csi-rbd"
		dc.Driver = rapid.SampledFrom([]string{plugin.RBDDriverName, "storage." + plugin.RBDDriverName}).Draw(t, "driver")
	case plan.DeploymentManifests:
		dc.Namespace = "ceph-csi"
		dc.Driver = plugin.RBDDriverName
	case plan.DeploymentRook:
		dc.Namespace = rapid.SampledFrom([]string{"rook-ceph", "storage"}).Draw(t, "namespace")
		dc.Driver = dc.Namespace + "." + plugin.RBDDriverName
	case plan.DeploymentOperator:
		dc.Namespace = rapid.SampledFrom([]string{"rook-ceph", "ceph-csi-operator-system"}).Draw(t, "namespace")
		dc.Driver = rapid.SampledFrom([]string{"rook-ceph." + plugin.RBDDriverName, plugin.RBDDriverName}).Draw(t, "driver")
		// An entry without monitors is not one a CephConnection makes.
		dc.Profile = dc.Entry != "no-monitors" && rapid.Bool().Draw(t, "profile")
	}
	return dc
}

// config is the config.json the driver reads: the deployment's own entry
// (another Ceph cluster's), then the migration entry as drawn.
func (dc deploymentCase) config(migration ceph.ClusterEntry) []byte {
	own := map[string]any{"clusterID": "5b6f0a4c-7e1d-4b0e-9a61-2b0c1d9a7e11", "monitors": []string{"10.1.0.1:6789"}}
	if dc.Form == plan.DeploymentRook {
		own = map[string]any{"clusterID": dc.Namespace, "monitors": []string{"10.1.0.1:6789"}, "namespace": dc.Namespace}
	}
	entries := []any{own}
	switch dc.Entry {
	case "present":
		entries = append(entries, migration)
	case "no-monitors":
		entries = append(entries, map[string]any{"clusterID": migration.ClusterID, "monitors": []string{}})
	}
	b, _ := json.Marshal(entries)
	return b
}

// objects are the deployment's objects as a dump of the cluster shows
// them.
func (dc deploymentCase) objects(migration ceph.ClusterEntry) []runtime.Object {
	cfg := string(dc.config(migration))
	mapName, key := "ceph-csi-config", "config.json"
	if dc.Form == plan.DeploymentRook {
		mapName, key = "rook-ceph-csi-config", "csi-cluster-config-json"
	}
	cm := &v1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: dc.Namespace, Name: mapName}, Data: map[string]string{key: cfg}}
	labels := map[string]string{"app": "csi-rbdplugin"}
	if dc.Form == plan.DeploymentHelm {
		labels = map[string]string{"app": "ceph-csi-rbd", "app.kubernetes.io/managed-by": "Helm", "release": "ceph-csi-rbd"}
		cm.Annotations = map[string]string{"meta.helm.sh/release-name": "ceph-csi-rbd"}
	}
	// CephFS's driver, as Ceph CSI's own manifests register it: the dump
	// has CSIDrivers, whatever the RBD driver's fate.
	out := []runtime.Object{cm, &storagev1.CSIDriver{TypeMeta: metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "CSIDriver"},
		ObjectMeta: metav1.ObjectMeta{Name: plugin.CephFSDriverName}}}
	if dc.Decoy {
		stale, _ := json.Marshal([]any{migration})
		out = append(out, &v1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "legacy-ceph-csi", Name: "ceph-csi-config"}, Data: map[string]string{"config.json": string(stale)}})
	}
	if !dc.Registered {
		return out
	}
	driver := &storagev1.CSIDriver{TypeMeta: metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "CSIDriver"}, ObjectMeta: metav1.ObjectMeta{Name: dc.Driver}}
	out = append(out, driver)
	if dc.Form == plan.DeploymentOperator {
		driver.Annotations = map[string]string{"csi.ceph.io/ownerref": `{"apiVersion":"csi.ceph.io/v1","kind":"Driver","namespace":"` + dc.Namespace + `","name":"` + dc.Driver + `"}`}
		object := func(kind, name string, spec map[string]any) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "csi.ceph.io/v1", "kind": kind,
				"metadata": map[string]any{"namespace": dc.Namespace, "name": name}, "spec": spec}}
		}
		out = append(out, object("Driver", dc.Driver, map[string]any{}))
		// The profiles the operator rendered the map from.
		var entries []ceph.ClusterEntry
		_ = json.Unmarshal([]byte(cfg), &entries)
		for i, e := range entries {
			if i > 0 && !dc.Profile {
				continue // appended to the map by hand
			}
			mons := []any{}
			for _, m := range e.Monitors {
				mons = append(mons, m)
			}
			out = append(out, object("CephConnection", e.ClusterID, map[string]any{"monitors": mons}),
				object("ClientProfile", e.ClusterID, map[string]any{"cephConnectionRef": map[string]any{"name": e.ClusterID}}))
		}
	}
	if dc.Pods && dc.Form != plan.DeploymentOperator {
		k := key
		if dc.Form != plan.DeploymentRook {
			k = "" // the whole map
		}
		out = append(out, nodePlugin(dc.Namespace, "rbd", dc.Driver, mapName, k, labels))
	}
	return out
}

// The plan's verdict on Ceph CSI's deployments, judged by Ceph CSI itself.
// Each round draws an RBD deployment in one of the four forms (Helm,
// manifests, Rook's own, the ceph-csi-operator's), its driver name and
// namespace, whether it runs, whether the dump shows its pods, a stale
// config map elsewhere, and the migration entry in what the driver reads
// (present, missing, without monitors; from a ClientProfile or appended).
// The plan runs on the dump; the driver is Ceph CSI's RBD controller run
// under the deployment's name, reading the config the deployment mounts,
// and is asked to expand the PV as the rewrite prints it (its driver
// name, handle and secret). A volume the plan calls ready must be served
// by a driver of the name the PV carries; a volume it blocks because the
// driver is missing or its entry is must be refused; a volume it does not
// judge (the input does not show the config) is counted. Both false
// counts must be zero.
func TestCephPlanDeploymentOracle(t *testing.T) {
	c, d := cephEnv(t)
	pool := "deployments"
	createPool(t, c, pool)
	draws := 16
	if s := os.Getenv("CSIMIGRATE_ORACLE_DRAWS"); s != "" {
		fmt.Sscan(s, &draws)
	}
	migration := ceph.EntryFor([]string{MonitorV1})
	secret := &v1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: "ceph-admin", Namespace: "default"},
		Type: "kubernetes.io/rbd", Data: map[string][]byte{"key": []byte(c.AdminKey)}}
	// One controller per driver name, started when first drawn.
	running := map[string]*NamedDriver{}
	t.Cleanup(func() {
		for _, r := range running {
			r.Stop()
		}
	})
	controller := func(name string) *NamedDriver {
		if r, ok := running[name]; ok {
			return r
		}
		r, err := c.StartRBDController(callCtx(t), name)
		if err != nil {
			t.Fatalf("Ceph CSI as %s: %v", name, err)
		}
		running[name] = r
		return r
	}
	defer func() {
		// The shared drivers read the config they had.
		_ = d.SetConfig([]byte("[]"))
	}()
	base := seed(t)
	var ready, blocked, notJudged, falseReady, falseBlocked int
	for round := range draws {
		form := deploymentForms[round%len(deploymentForms)]
		entry := ""
		if round%8 < len(deploymentForms) {
			entry = "present"
		}
		var dc deploymentCase
		rapid.Custom(func(rt *rapid.T) int { dc = drawDeployment(rt, form, entry); return 0 }).Example(base + round)
		what := fmt.Sprintf("round %d (seed %d): %s", round, base+round, dc)
		image := "kubernetes-dynamic-pvc-" + NewUUID()
		if _, err := c.RBD(callCtx(t), "create", "--size", "64M", pool+"/"+image); err != nil {
			t.Fatal(err)
		}
		pv := inTreeRBDPV("pv-"+image[len(image)-8:], rbdCase{Monitors: []string{MonitorV1}, Pool: pool, Image: image}, "admin", secret.Name)
		pv.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
		objs := append(dc.objects(migration), secret, pv)

		var p struct {
			Volumes []struct {
				Name       string `json:"name"`
				Driver     string `json:"driver"`
				Migratable bool   `json:"migratable"`
				Findings   []struct {
					Code string `json:"code"`
				} `json:"findings"`
			} `json:"volumes"`
		}
		if err := json.Unmarshal(runObjects(t, []string{"plan", "-o", "json"}, objs...), &p); err != nil || len(p.Volumes) != 1 {
			t.Fatalf("%s: the plan: %v %+v", what, err, p)
		}
		v := p.Volumes[0]
		var codes []string
		for _, f := range v.Findings {
			codes = append(codes, f.Code)
		}
		// The PV as the rewrite prints it; where it refuses, as the
		// translation names the upstream driver.
		csiPV := rewrittenPV(runObjects(t, []string{"rewrite", "-o", "yaml"}, objs...), pv.Name)
		if csiPV == nil {
			if v.Migratable {
				t.Errorf("%s: the plan calls it ready, rewrite -o yaml prints no PV", what)
			}
			tr, err := translate.New()
			if err != nil {
				t.Fatal(err)
			}
			if csiPV, err = tr.TranslateInTreePVToCSI(klog.Background(), pv); err != nil {
				t.Fatal(err)
			}
		}
		// What the driver does with it: none runs under another name.
		refusal := ""
		switch src := csiPV.Spec.CSI; {
		case !dc.Registered:
			refusal = "no Ceph CSI RBD driver runs"
		case src.Driver != dc.Driver:
			refusal = fmt.Sprintf("the PV names driver %s, the cluster runs %s", src.Driver, dc.Driver)
		default:
			if err := d.SetConfig(dc.config(migration)); err != nil {
				t.Fatal(err)
			}
			sec := secrets.SecretStringData(secret)
			if ref := src.ControllerExpandSecretRef; ref == nil || ref.Name != secret.Name || ref.Namespace != secret.Namespace {
				sec = nil
			}
			_, err := controller(dc.Driver).ControllerExpandVolume(callCtx(t), &csi.ControllerExpandVolumeRequest{VolumeId: src.VolumeHandle,
				CapacityRange: &csi.CapacityRange{RequiredBytes: expandSize}, Secrets: sec, VolumeCapability: mountCap("ext4")})
			if err != nil {
				refusal = "ControllerExpandVolume: " + err.Error()
			}
		}
		driverReason := slices.ContainsFunc(codes, func(c string) bool {
			return c == plan.FindingCephClusterEntryMissing || c == plan.FindingCSIDriverMissing
		})
		switch {
		case v.Migratable && refusal != "":
			falseReady++
			t.Errorf("false ready: %s: the plan calls it ready (driver %s), the driver: %s", what, v.Driver, refusal)
		case v.Migratable:
			ready++
		case driverReason && refusal == "":
			falseBlocked++
			t.Errorf("false blocked: %s: the plan blocks it (%v), the driver serves it", what, codes)
		case driverReason:
			blocked++
		case slices.Contains(codes, plan.FindingCephCSIConfigNotFound):
			notJudged++
			t.Logf("not judged: %s: %v", what, codes)
		default:
			t.Errorf("%s: blocked for %v, which the oracle does not draw", what, codes)
		}
	}
	t.Logf("%d draws: %d ready and served, %d blocked and refused, %d not judged (the dump does not show the config); %d false ready, %d false blocked",
		draws, ready, blocked, notJudged, falseReady, falseBlocked)
	if ready == 0 || blocked == 0 {
		t.Errorf("the draws judged %d ready and %d blocked volumes: the oracle must see both", ready, blocked)
	}
}

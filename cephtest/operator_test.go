package cephtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/secrets"
)

// OperatorVersion is the ceph-csi-operator scripts/setup-ceph builds.
const OperatorVersion = "v1.0.4"

// operatorDir is where scripts/setup-ceph built the ceph-csi-operator and
// put its CRDs (or CSIMIGRATE_CEPH_CSI_OPERATOR).
func operatorDir() (string, error) {
	return builtDir("CSIMIGRATE_CEPH_CSI_OPERATOR", "ceph-csi-operator", OperatorVersion, "ceph-csi-operator", "crd")
}

var (
	clientProfileGVR  = schema.GroupVersionResource{Group: "csi.ceph.io", Version: "v1", Resource: "clientprofiles"}
	cephConnectionGVR = schema.GroupVersionResource{Group: "csi.ceph.io", Version: "v1", Resource: "cephconnections"}
)

// On a cluster whose Ceph CSI the ceph-csi-operator runs (Rook from 1.18),
// the plan gives a migrated volume's cluster entry as a CephConnection and
// a ClientProfile; the API server accepts them under the operator's CRDs,
// the real operator renders them into its ceph-csi-config beside the
// entries it had, and the plan then finds the entry served.
func TestCephCSIOperatorRendersPlanEntry(t *testing.T) {
	dir, cl, d, srv, kc, dyn := operatorEnv(t)
	ctx, c := context.Background(), srv.Client
	const ns = "rook-ceph"
	const rbdDriver = ns + ".rbd.csi.ceph.com"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Rook's RBD driver, as the operator registers it, in place of the
	// upstream one.
	if err := srv.RemoveCSIDrivers(plugin.RBDDriverName); err != nil {
		t.Fatal(err)
	}
	owner := `{"apiVersion":"csi.ceph.io/v1","kind":"Driver","namespace":"` + ns + `","name":"` + rbdDriver + `"}`
	if _, err := c.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: rbdDriver,
		Annotations: map[string]string{"csi.ceph.io/ownerref": owner}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := srv.SpawnEnv("ceph-csi-operator", []string{"OPERATOR_NAMESPACE=" + ns, "KUBECONFIG=" + kc}, filepath.Join(dir, "ceph-csi-operator"),
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--leader-elect=false"); err != nil {
		t.Fatalf("cannot start the ceph-csi-operator: %v", err)
	}
	// Rook's own cluster, which the operator renders first.
	create(t, dyn, cephConnectionGVR, ns, "rook-ceph", map[string]any{"monitors": []any{"10.9.9.9:6789"}})
	create(t, dyn, clientProfileGVR, ns, "rook-ceph", map[string]any{"cephConnectionRef": map[string]any{"name": "rook-ceph"}})
	rendered := func(id string) (bool, string) {
		cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "ceph-csi-config", metav1.GetOptions{})
		if err != nil {
			return false, err.Error() + "\n" + srv.Logs("ceph-csi-operator")
		}
		cfg, err := ceph.ParseClusterConfig([]byte(cm.Data["config.json"]))
		if err != nil {
			return false, err.Error()
		}
		_, err = cfg.Lookup(id)
		return err == nil, cm.Data["config.json"]
	}
	poll(t, 60*time.Second, "Rook's entry rendered", func() (bool, string) { return rendered("rook-ceph") })

	// An in-tree RBD PV of an image of the real cluster, with its secret.
	pool := "operator"
	pv, image := imagePV(t, cl, c, pool, "pv-operator")
	plan := func() operatorPlan { return livePlan(t, kc) }
	rbdFindings := func(p operatorPlan) string {
		var codes []string
		for _, v := range p.Volumes {
			if v.Plugin == "kubernetes.io/rbd" {
				for _, f := range v.Findings {
					codes = append(codes, v.Name+":"+f.Code)
				}
			}
		}
		return strings.Join(codes, " ")
	}
	before := plan()
	var objects []map[string]any
	id := ceph.EntryFor([]string{MonitorV1}).ClusterID
	for _, cfg := range before.Config {
		if cfg.Deployment == "ceph-csi-operator" && cfg.Namespace == ns {
			objects = cfg.Objects
		}
	}
	if len(objects) != 2 || !strings.Contains(rbdFindings(before), string(rewrite.CodeCephEntryMissing)) {
		t.Fatalf("plan before the entry: objects %v, RBD findings %s", objects, rbdFindings(before))
	}
	// Created as the plan prints them (kubectl create -f).
	for _, o := range objects {
		u := &unstructured.Unstructured{Object: o}
		gvr := cephConnectionGVR
		if u.GetKind() == "ClientProfile" {
			gvr = clientProfileGVR
		}
		if _, err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the API server refuses the plan's %s: %v", u.GetKind(), err)
		}
	}
	poll(t, 60*time.Second, "the plan's entry rendered by the operator", func() (bool, string) { return rendered(id) })
	if ok, cfg := rendered("rook-ceph"); !ok {
		t.Fatalf("Rook's entry lost: %s", cfg)
	}
	after := plan()
	if f := rbdFindings(after); strings.Contains(f, string(rewrite.CodeCephEntryMissing)) || strings.Contains(f, "CephCSIConfigNotFound") {
		t.Fatalf("the rendered entry is not found served: %s", f)
	}
	// Ceph CSI reads the config.json the operator rendered, and serves the
	// rewritten PV (which names Rook's driver) through it: expanded as
	// external-resizer does, with the secret its controllerExpandSecretRef
	// names.
	cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "ceph-csi-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SetConfig([]byte(cm.Data["config.json"])); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runCsimigrate(t, "rewrite", "-live", "-kubeconfig", kc, "-o", "yaml")
	if code != 0 {
		t.Fatalf("rewrite -o yaml: exit %d: %s", code, stderr)
	}
	rewritten := rewrittenPV(out, pv.Name)
	if rewritten == nil || rewritten.Spec.CSI == nil || rewritten.Spec.CSI.Driver != rbdDriver || rewritten.Spec.CSI.ControllerExpandSecretRef == nil {
		t.Fatalf("the rewritten PV: %+v\n%s", rewritten, out)
	}
	ref := rewritten.Spec.CSI.ControllerExpandSecretRef
	sec, err := c.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("controllerExpandSecretRef %s/%s: %v", ref.Namespace, ref.Name, err)
	}
	// Ceph CSI as the operator runs it, under the Driver's name.
	rook, err := cl.StartRBDController(ctx, rbdDriver)
	if err != nil {
		t.Fatalf("Ceph CSI as %s: %v", rbdDriver, err)
	}
	t.Cleanup(rook.Stop)
	if _, err := rook.ControllerExpandVolume(callCtx(t), &csi.ControllerExpandVolumeRequest{VolumeId: rewritten.Spec.CSI.VolumeHandle,
		CapacityRange: &csi.CapacityRange{RequiredBytes: expandSize}, Secrets: secrets.SecretStringData(sec), VolumeCapability: mountCap("ext4")}); err != nil {
		t.Fatalf("ControllerExpandVolume through the operator's config: %v\n%s", err, rook.Log())
	}
	if got := images(t, cl, pool)[image]; got != expandSize {
		t.Errorf("image size %d after the expansion, want %d", got, expandSize)
	}
}

// operatorEnv is what the operator tests start from: the directory the
// operator was built into, Ceph and Ceph CSI, a kube-apiserver with the
// operator's CRDs served, its kubeconfig and a dynamic client.
func operatorEnv(t *testing.T) (string, *Cluster, *Drivers, *testenv.Server, string, dynamic.Interface) {
	t.Helper()
	dir, err := operatorDir()
	if err != nil {
		t.Fatal(err)
	}
	cl, d := cephEnv(t)
	srv, err := testenv.Start(os.Stderr)
	if err != nil {
		t.Fatalf("cannot start kube-apiserver: %v", err)
	}
	t.Cleanup(srv.Stop)
	kc, err := srv.WriteKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	createCRDs(t, dyn, filepath.Join(dir, "crd"), 5)
	poll(t, 30*time.Second, "the operator's API", func() (bool, string) {
		_, err := dyn.Resource(driverGVR).Namespace("default").List(context.Background(), metav1.ListOptions{})
		return err == nil, fmt.Sprint(err)
	})
	return dir, cl, d, srv, kc, dyn
}

// operatorPlan is what the operator tests read of `csimigrate plan -o json`.
type operatorPlan struct {
	Volumes []struct {
		Name, Plugin string
		Migratable   bool
		Findings     []struct{ Code, Message string }
	}
	Config []struct {
		Deployment, Namespace string
		Install               bool
		Missing, Entries      []ceph.ClusterEntry
		Served                []string
		Objects               []map[string]any
	} `json:"cephCSIConfig"`
}

// livePlan is `csimigrate plan -live` on the cluster of kubeconfig kc
// (exit 1, something blocks, is a plan too).
func livePlan(t *testing.T, kc string) operatorPlan {
	t.Helper()
	out, stderr, code := runCsimigrate(t, "plan", "-live", "-kubeconfig", kc, "-o", "json")
	if code != 0 && code != 1 {
		t.Fatalf("plan -live: exit %d: %s", code, stderr)
	}
	var p operatorPlan
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("plan output: %v\n%s", err, out)
	}
	return p
}

// imagePV makes pool with a 64 MiB image, the admin's Secret ceph-admin in
// namespace default, and an in-tree RBD PV name of the image (Retain), and
// returns the PV and the image's name.
func imagePV(t *testing.T, cl *Cluster, c kubernetes.Interface, pool, name string) (*v1.PersistentVolume, string) {
	t.Helper()
	ctx := context.Background()
	image := "kubernetes-dynamic-pvc-" + NewUUID()
	createPool(t, cl, pool)
	if _, err := cl.RBD(callCtx(t), "create", "--size", "64M", pool+"/"+image); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Secrets("default").Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ceph-admin", Namespace: "default"},
		Type: "kubernetes.io/rbd", Data: map[string][]byte{"key": []byte(cl.AdminKey)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pv := inTreeRBDPV(name, rbdCase{Monitors: []string{MonitorV1}, Pool: pool, Image: image}, "admin", "ceph-admin")
	pv.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return pv, image
}

// create creates an object of the operator's API.
func create(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, name string, spec map[string]any) {
	t.Helper()
	kind := map[string]string{"clientprofiles": "ClientProfile", "cephconnections": "CephConnection"}[gvr.Resource]
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "csi.ceph.io/v1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
	if _, err := dyn.Resource(gvr).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("%s %s: %v", kind, name, err)
	}
}

// runCsimigrate runs the command, returning its output, stderr and exit code.
func runCsimigrate(t *testing.T, args ...string) ([]byte, string, int) {
	t.Helper()
	cmd := exec.Command(envBin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		return out, stderr.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("csimigrate %s: %v", strings.Join(args, " "), err)
	}
	return out, stderr.String(), 0
}

// entryRendered is the config.json the ceph-csi-operator rendered into
// ceph-csi-config in ns, and whether it has entry id (else what is there,
// or the operator's log).
func entryRendered(ctx context.Context, srv *testenv.Server, ns, id string) (string, bool) {
	cm, err := srv.Client.CoreV1().ConfigMaps(ns).Get(ctx, "ceph-csi-config", metav1.GetOptions{})
	if err != nil {
		return err.Error() + "\n" + srv.Logs("ceph-csi-operator"), false
	}
	rendered := cm.Data["config.json"]
	cfg, err := ceph.ParseClusterConfig([]byte(rendered))
	if err != nil {
		return err.Error(), false
	}
	_, err = cfg.Lookup(id)
	return rendered, err == nil
}

var driverGVR = schema.GroupVersionResource{Group: "csi.ceph.io", Version: "v1", Resource: "drivers"}

// On a cluster without Ceph CSI (no CSIDriver of it, nothing of its config),
// the plan's Ceph CSI config is the driver's installation with the
// ceph-csi-operator: a Driver per driver, a CephConnection with the
// volumes' monitors and a ClientProfile named by the clusterID the
// rewritten PVs carry. Created as printed, the real operator deploys the
// drivers (their CSIDrivers, Deployment and DaemonSet) and renders the
// entry into ceph-csi-config; the plan then finds both drivers installed
// and the entry served, and Ceph CSI, reading that config, serves the
// rewritten PV.
func TestCephCSIOperatorInstallFromPlan(t *testing.T) {
	dir, cl, d, srv, kc, dyn := operatorEnv(t)
	ctx, c := context.Background(), srv.Client
	// No Ceph CSI: neither its CSIDrivers nor its config map.
	if err := srv.RemoveCSIDrivers(plugin.RBDDriverName, plugin.CephFSDriverName); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().ConfigMaps("ceph-csi").Delete(ctx, "ceph-csi-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pool := "operator-install"
	pv, image := imagePV(t, cl, c, pool, "pv-install")
	id := ceph.EntryFor([]string{MonitorV1}).ClusterID
	plan := func() operatorPlan { return livePlan(t, kc) }
	before := plan()
	if len(before.Config) != 1 || !before.Config[0].Install || before.Config[0].Namespace != "ceph-csi-operator-system" {
		t.Fatalf("the plan without Ceph CSI: %+v", before.Config)
	}
	objects := before.Config[0].Objects
	var kinds []string
	for _, o := range objects {
		u := &unstructured.Unstructured{Object: o}
		kinds = append(kinds, u.GetKind()+"/"+u.GetName())
	}
	if want := []string{"Driver/" + plugin.RBDDriverName, "CephConnection/" + id, "ClientProfile/" + id}; !slices.Equal(kinds, want) {
		t.Fatalf("the plan's objects %v, want %v", kinds, want)
	}
	// The operator installed (its namespace), then the objects created as
	// printed (kubectl create -f).
	const ns = "ceph-csi-operator-system"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := srv.SpawnEnv("ceph-csi-operator", []string{"OPERATOR_NAMESPACE=" + ns, "KUBECONFIG=" + kc}, filepath.Join(dir, "ceph-csi-operator"),
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--leader-elect=false"); err != nil {
		t.Fatalf("cannot start the ceph-csi-operator: %v", err)
	}
	gvrOf := map[string]schema.GroupVersionResource{"Driver": driverGVR, "CephConnection": cephConnectionGVR, "ClientProfile": clientProfileGVR}
	for _, o := range objects {
		u := &unstructured.Unstructured{Object: o}
		if _, err := dyn.Resource(gvrOf[u.GetKind()]).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the API server refuses the plan's %s: %v", u.GetKind(), err)
		}
	}
	var rendered string
	poll(t, 90*time.Second, "the operator to deploy the driver and render the entry", func() (bool, string) {
		if _, err := c.StorageV1().CSIDrivers().Get(ctx, plugin.RBDDriverName, metav1.GetOptions{}); err != nil {
			return false, "CSIDriver: " + err.Error() + "\n" + srv.Logs("ceph-csi-operator")
		}
		if ds, err := c.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{}); err != nil || len(ds.Items) == 0 {
			return false, fmt.Sprintf("no node plugin DaemonSet (%v)\n%s", err, srv.Logs("ceph-csi-operator"))
		}
		var ok bool
		rendered, ok = entryRendered(ctx, srv, ns, id)
		return ok, rendered
	})
	after := plan()
	for _, v := range after.Volumes {
		if v.Name == pv.Name && !v.Migratable {
			t.Errorf("%s after the install: not migratable: %+v", pv.Name, v.Findings)
		}
	}
	if len(after.Config) != 1 || after.Config[0].Install || !slices.Contains(after.Config[0].Served, id) {
		t.Errorf("the plan after the install: %+v", after.Config)
	}
	// Ceph CSI reading the rendered config serves the rewritten PV.
	if err := d.SetConfig([]byte(rendered)); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runCsimigrate(t, "rewrite", "-live", "-kubeconfig", kc, "-o", "yaml")
	if code != 0 {
		t.Fatalf("rewrite -o yaml: exit %d: %s", code, stderr)
	}
	rewritten := rewrittenPV(out, pv.Name)
	if rewritten == nil || rewritten.Spec.CSI == nil || rewritten.Spec.CSI.VolumeAttributes["clusterID"] != id || rewritten.Spec.CSI.ControllerExpandSecretRef == nil {
		t.Fatalf("the rewritten PV: %+v\n%s", rewritten, out)
	}
	ref := rewritten.Spec.CSI.ControllerExpandSecretRef
	sec, err := c.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("controllerExpandSecretRef %s/%s: %v", ref.Namespace, ref.Name, err)
	}
	if _, err := d.RBD.ControllerExpandVolume(callCtx(t), &csi.ControllerExpandVolumeRequest{VolumeId: rewritten.Spec.CSI.VolumeHandle,
		CapacityRange: &csi.CapacityRange{RequiredBytes: expandSize}, Secrets: secrets.SecretStringData(sec), VolumeCapability: mountCap("ext4")}); err != nil {
		t.Fatalf("ControllerExpandVolume through the operator's config: %v\n%s", err, d.Log("cephcsi-rbd"))
	}
	if got := images(t, cl, pool)[image]; got != expandSize {
		t.Errorf("image size %d after the expansion, want %d", got, expandSize)
	}
}

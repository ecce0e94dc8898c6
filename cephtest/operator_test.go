package cephtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
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
	ctx, c := context.Background(), srv.Client
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
		_, err := dyn.Resource(clientProfileGVR).Namespace("default").List(ctx, metav1.ListOptions{})
		return err == nil, fmt.Sprint(err)
	})
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
	pool, image := "operator", "kubernetes-dynamic-pvc-"+NewUUID()
	createPool(t, cl, pool)
	if _, err := cl.RBD(callCtx(t), "create", "--size", "64M", pool+"/"+image); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Secrets("default").Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ceph-admin", Namespace: "default"},
		Type: "kubernetes.io/rbd", Data: map[string][]byte{"key": []byte(cl.AdminKey)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pv := inTreeRBDPV("pv-operator", rbdCase{Monitors: []string{MonitorV1}, Pool: pool, Image: image}, "admin", "ceph-admin")
	pv.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	type planOut struct {
		Volumes []struct {
			Name, Plugin string
			Migratable   bool
			Findings     []struct{ Code string }
		}
		Config []struct {
			Deployment, Namespace string
			Missing               []ceph.ClusterEntry
			Objects               []map[string]any
		} `json:"cephCSIConfig"`
	}
	plan := func() planOut {
		out, stderr, code := runCsimigrate(t, "plan", "-live", "-kubeconfig", kc, "-o", "json")
		if code != 0 && code != 1 {
			t.Fatalf("plan -live: exit %d: %s", code, stderr)
		}
		var p planOut
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatalf("plan output: %v\n%s", err, out)
		}
		return p
	}
	rbdFindings := func(p planOut) string {
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
	if len(objects) != 2 || !strings.Contains(rbdFindings(before), "CephClusterEntryMissing") {
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
	if f := rbdFindings(after); strings.Contains(f, "CephClusterEntryMissing") || strings.Contains(f, "CephCSIConfigNotFound") {
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

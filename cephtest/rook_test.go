package cephtest

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/secrets"
)

// rookRBDDriver is the RBD driver's name on Rook (prefix: the operator's
// namespace).
const rookRBDDriver = "rook-ceph." + plugin.RBDDriverName

// rookConfig is Rook's csi-cluster-config-json: its entry for the
// CephCluster of namespace rook-ceph (the one monitor it imports, by its
// msgr2 address), then more.
func rookConfig(t testing.TB, more ...ceph.ClusterEntry) []byte {
	t.Helper()
	entries := []any{map[string]any{"clusterID": "rook-ceph", "monitors": []string{MonitorV2}, "namespace": "rook-ceph"}}
	for _, e := range more {
		entries = append(entries, e)
	}
	b, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// installRook makes the API server's objects those of Rook 1.17 running
// Ceph CSI's RBD driver: its CSIDriver in place of the upstream one, its
// node plugin DaemonSet mounting rook-ceph-csi-config, and that map with
// config.
func installRook(t testing.TB, cs kubernetes.Interface, config []byte) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rook-ceph"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.StorageV1().CSIDrivers().Delete(ctx, plugin.RBDDriverName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if _, err := cs.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: rookRBDDriver}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ds := nodePlugin("rook-ceph", "rbd", rookRBDDriver, "rook-ceph-csi-config", "csi-cluster-config-json", nil)
	if _, err := cs.AppsV1().DaemonSets("rook-ceph").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("rook-ceph").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "rook-ceph-csi-config"},
		Data: map[string]string{"csi-cluster-config-json": string(config)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// rookCephFSDriver is the CephFS driver's name on Rook.
const rookCephFSDriver = "rook-ceph." + plugin.CephFSDriverName

// A static CephFS PV on a cluster whose Ceph CSI Rook runs: the plan finds
// Rook's CephFS driver and its map (rook-ceph-csi-config, shown by the
// node plugin that mounts it) serving the migration entry, the rewrite
// names Rook's driver, and Ceph CSI's CephFS node server run under that
// name (--drivername=rook-ceph.cephfs.csi.ceph.com) with that map's
// config.json stages and publishes it: the file written before the
// migration is read through it.
func TestCephFSRookDriverStagesRewrittenPV(t *testing.T) {
	c, d := cephEnv(t)
	ctx := callCtx(t)
	const user = "rookapp"
	mnt := adminMount(t, c)
	if err := os.MkdirAll(filepath.Join(mnt, "volumes/rook1"), 0o755); err != nil {
		t.Fatal(err)
	}
	const content = "written before the migration to Rook's driver\n"
	if err := os.WriteFile(filepath.Join(mnt, "volumes/rook1/hello.txt"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ceph(ctx, "fs", "authorize", FSName, "client."+user, "/volumes/rook1", "rw"); err != nil {
		t.Fatal(err)
	}
	key, err := c.Ceph(ctx, "auth", "get-key", "client."+user)
	if err != nil {
		t.Fatal(err)
	}
	inTreeSecret := &v1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: "cephfs-rookapp", Namespace: "apps"},
		Data: map[string][]byte{"key": []byte(strings.TrimSpace(key))}}
	derived, err := secrets.CephFSCSISecret(inTreeSecret, user)
	if err != nil {
		t.Fatal(err)
	}
	derived.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}
	pv := inTreeCephFSPV("rook-shared", "/volumes/rook1", user, inTreeSecret.Name)
	config := rookConfig(t, ceph.EntryFor([]string{MonitorV1}))
	objs := []runtime.Object{inTreeSecret, derived, pv,
		&storagev1.CSIDriver{TypeMeta: metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "CSIDriver"}, ObjectMeta: metav1.ObjectMeta{Name: rookRBDDriver}},
		&storagev1.CSIDriver{TypeMeta: metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "CSIDriver"}, ObjectMeta: metav1.ObjectMeta{Name: rookCephFSDriver}},
		&v1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "rook-ceph-csi-config"},
			Data: map[string]string{"csi-cluster-config-json": string(config)}},
		nodePlugin("rook-ceph", "cephfs", rookCephFSDriver, "rook-ceph-csi-config", "csi-cluster-config-json", nil),
	}
	var p struct {
		Volumes []struct {
			Name, Driver string
			Migratable   bool
			Reason       string
		} `json:"volumes"`
		Config []struct {
			Deployment string   `json:"deployment"`
			Served     []string `json:"served"`
		} `json:"cephCSIConfig"`
	}
	out := runObjects(t, []string{"plan", "-o", "json"}, objs...)
	if err := json.Unmarshal(out, &p); err != nil || len(p.Volumes) != 1 || len(p.Config) != 1 {
		t.Fatalf("the plan: %v\n%s", err, out)
	}
	if v, cfg := p.Volumes[0], p.Config[0]; !v.Migratable || v.Driver != rookCephFSDriver || cfg.Deployment != "rook" || len(cfg.Served) != 1 {
		t.Fatalf("the plan: volume %+v, config %+v; want it ready for %s, its entry served by Rook's map\n%s", v, cfg, rookCephFSDriver, out)
	}
	rewritten := rewrittenPV(runObjects(t, []string{"rewrite", "-o", "yaml"}, objs...), pv.Name)
	if rewritten == nil || rewritten.Spec.CSI == nil || rewritten.Spec.CSI.Driver != rookCephFSDriver {
		t.Fatalf("the rewritten PV: %+v, want a CSI PV of %s", rewritten, rookCephFSDriver)
	}
	src := rewritten.Spec.CSI
	if ref := src.NodeStageSecretRef; ref == nil || ref.Name != derived.Name || ref.Namespace != derived.Namespace {
		t.Fatalf("nodeStageSecretRef %v, want %s/%s", ref, derived.Namespace, derived.Name)
	}

	// Ceph CSI as Rook runs it, reading Rook's map.
	if err := d.SetConfig(config); err != nil {
		t.Fatal(err)
	}
	rook, err := c.StartCephFSDriver(ctx, rookCephFSDriver)
	if err != nil {
		t.Fatalf("Ceph CSI as %s: %v", rookCephFSDriver, err)
	}
	t.Cleanup(rook.Stop)
	if info, err := rook.Identity.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{}); err != nil || info.Name != src.Driver {
		t.Fatalf("GetPluginInfo: %v %v, want %s", info, err, src.Driver)
	}
	staging := filepath.Join(t.TempDir(), "staging")
	if err := os.Mkdir(staging, 0o750); err != nil {
		t.Fatal(err)
	}
	// The kernel client cannot mount here: ceph-fuse, as in-tree's
	// fallback did.
	vc := maps.Clone(src.VolumeAttributes)
	vc["mounter"] = "fuse"
	if _, err := rook.Node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: src.VolumeHandle, StagingTargetPath: staging,
		VolumeCapability: rwx(), VolumeContext: vc, Secrets: secrets.SecretStringData(derived)}); err != nil {
		t.Fatalf("NodeStageVolume: %v\n%s", err, rook.Log())
	}
	t.Cleanup(func() {
		_, _ = rook.Node.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: src.VolumeHandle, StagingTargetPath: staging})
	})
	target := filepath.Join(t.TempDir(), "target")
	if _, err := rook.Node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: src.VolumeHandle, StagingTargetPath: staging,
		TargetPath: target, VolumeCapability: rwx(), VolumeContext: src.VolumeAttributes}); err != nil {
		t.Fatalf("NodePublishVolume: %v\n%s", err, rook.Log())
	}
	got, err := os.ReadFile(filepath.Join(target, "hello.txt"))
	if err != nil || string(got) != content {
		t.Errorf("reading hello.txt through the published volume: %q, %v; want %q", got, err, content)
	}
	if _, err := rook.Node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: src.VolumeHandle, TargetPath: target}); err != nil {
		t.Errorf("NodeUnpublishVolume: %v", err)
	}
	if _, err := rook.Node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: src.VolumeHandle, StagingTargetPath: staging}); err != nil {
		t.Errorf("NodeUnstageVolume: %v", err)
	}
}

// nodePlugin is Ceph CSI's node plugin DaemonSet as a deployment runs it:
// typ ("rbd", "cephfs") under driver, mounting config map configMap (with
// key as config.json; "" for the whole map).
func nodePlugin(ns, typ, driver, configMap, key string, labels map[string]string) *appsv1.DaemonSet {
	name := "csi-" + typ + "plugin"
	vol := v1.Volume{Name: "ceph-csi-configs", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: configMap}}}}
	if key != "" {
		vol.ConfigMap.Items = []v1.KeyToPath{{Key: key, Path: "config.json"}}
	}
	selector := map[string]string{"app": name}
	return &appsv1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: selector}, Template: v1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: selector},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: name, Image: "quay.io/cephcsi/cephcsi:" + CephCSIVersion,
				Args: []string{"--nodeid=$(NODE_ID)", "--type=" + typ, "--nodeserver=true", "--drivername=" + driver}}},
				Volumes: []v1.Volume{vol}}}}}
}

// rewrittenPV is PV name as rewrite -o yaml prints it in out (nil when it
// prints none).
func rewrittenPV(out []byte, name string) *v1.PersistentVolume {
	var pv *v1.PersistentVolume
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var r v1.PersistentVolume
		if strings.Contains(doc, "kind: PersistentVolume\n") && yaml.Unmarshal([]byte(doc), &r) == nil && r.Name == name {
			pv = &r
		}
	}
	return pv
}

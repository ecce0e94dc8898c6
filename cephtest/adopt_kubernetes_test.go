package cephtest

import (
	"bytes"
	"context"
	"crypto/rand"
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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/rewrite"
)

// SnapshotterVersion is the external-snapshotter release the snapshot tests
// run (snapshot-controller, csi-snapshotter and the VolumeSnapshot CRDs of
// its client module, built by ../scripts/setup-ceph).
const SnapshotterVersion = "v8.7.0"

// snapshotterDir holds external-snapshotter's binaries and CRDs.
func snapshotterDir() (string, error) {
	return builtDir("CSIMIGRATE_EXTERNAL_SNAPSHOTTER", "external-snapshotter", SnapshotterVersion, "csi-snapshotter", "snapshot-controller", "crd")
}

// builtDir is the directory scripts/setup-ceph built a peer's files into
// (name-version in the user cache, or the directory env names), when it
// holds them all.
func builtDir(env, name, version string, files ...string) (string, error) {
	dir := os.Getenv(env)
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(cache, "csimigrate", name+"-"+version)
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return "", fmt.Errorf("%s %s is not built (run scripts/setup-ceph): %w", name, version, err)
		}
	}
	return dir, nil
}

// createCRDs creates the CRDs of the YAML files of a directory (created:
// some are too large for client-side apply's annotation); it fails the
// test unless there are want of them.
func createCRDs(t testing.TB, dyn dynamic.Interface, dir string, want int) {
	t.Helper()
	crds, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(crds) != want {
		t.Fatalf("the CRDs of %s: %v %v, want %d", dir, crds, err, want)
	}
	for _, f := range crds {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var u unstructured.Unstructured
		if err := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096).Decode(&u.Object); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := dyn.Resource(crdGVR).Create(context.Background(), &u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
}

var (
	snapshotGVR        = schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"}
	snapshotClassGVR   = schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshotclasses"}
	crdGVR             = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	snapshotContentGVR = schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshotcontents"}
)

// The whole chain on a real control plane: an in-tree RBD PV of a layering
// image, bound to a claim, rewritten with -adopt by csimigrate; then, through
// Kubernetes alone (external-snapshotter's snapshot-controller and
// csi-snapshotter, external-provisioner, kube-controller-manager, Ceph
// CSI's RBD controller): a VolumeSnapshot of the migrated claim becomes
// ReadyToUse, a claim restored from it and a claim cloned from the migrated
// claim are provisioned and their images hold the original bytes (read back
// with rbd export); the migrated volume expands; and deleting its claim
// (reclaim policy Delete) removes the image and its journal entry.
//
// Here the cluster runs Ceph CSI as Rook does (--drivername
// rook-ceph.rbd.csi.ceph.com, rook-ceph-csi-config with Rook's entry for
// the same Ceph cluster, by the monitor's msgr2 address, and the
// migration's): the rewrite names Rook's driver; plan -read-ceph says, and
// the adoption does (reading Rook's map, no -ceph-config), that the adopted
// volume joins Rook's entry, clusterID rook-ceph (compared by fsid); the
// sidecars serve the driver under that name; and the expansion and the
// deletion of the adopted volume work with Rook's entry alone.
func TestCephRBDAdoptSnapshotCloneKubernetes(t *testing.T) {
	adoptChainKubernetes(t, "kube.adopt-k8s", adoptByRewrite, true)
}

// The same chain with csimigrate's controller (the command's binary, with
// -adopt and Ceph's tools) adopting the PV as it rewrites it, instead of
// rewrite -apply -adopt: what the controller makes is as much Ceph CSI's
// own volume (snapshot, clone, expansion, deletion through Kubernetes).
func TestCephRBDAdoptByControllerKubernetes(t *testing.T) {
	adoptChainKubernetes(t, "kube.adopt-ctl", adoptByController, false)
}

// adoptBy rewrites the in-tree PV pv and StorageClass sc of the cluster
// of kubeconfig kc with adoption, reaching Ceph with ceph.conf conf and
// Ceph CSI's config cfgFile ("": the config the cluster's driver reads),
// and returns once both are done.
type adoptBy func(t *testing.T, srv *testenv.Server, kc, conf, cfgFile, pv, sc string)

// adoptByRewrite runs csimigrate rewrite -apply -adopt.
func adoptByRewrite(t *testing.T, s *testenv.Server, kc, conf, cfgFile, pv, sc string) {
	serveDriverConfig(t, s.Client)
	args := []string{"rewrite", "-apply", "-kubeconfig", kc, "-adopt", "-ceph-conf", conf}
	if cfgFile != "" {
		args = append(args, "-ceph-config", cfgFile)
	}
	out, err := exec.Command(envBin, append(args, pv, "storageclass/"+sc)...).CombinedOutput()
	if err != nil {
		t.Fatalf("csimigrate rewrite -apply -adopt: %v\n%s", err, out)
	}
	t.Logf("csimigrate rewrite -apply -adopt:\n%s", out)
}

// adoptByController runs csimigrate controller -adopt (owned by the test's
// server, stopped with it) and waits for it to have rewritten the PV and
// replaced the class; the driver's CSIDriver object, which the controller
// waits for, is registered first, and the config the driver reads is served
// (the controller waits for each Ceph volume's entry there).
func adoptByController(t *testing.T, srv *testenv.Server, kc, conf, cfgFile, pv, sc string) {
	ctx := context.Background()
	serveDriverConfig(t, srv.Client)
	if _, err := srv.Client.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: plugin.RBDDriverName}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	args := []string{"controller", "-kubeconfig", kc, "-metrics-address", "", "-v",
		"-recheck", "2s", "-status-every", "1s", "-adopt", "-ceph-conf", conf, "-ceph-config", cfgFile}
	// First a dry run with the adopt-ceph overlay's adoption (as the base
	// runs it): its verdict names the Ceph journal writes the real run
	// makes, and it holds up no writer (its own Lease): the acting
	// controller starts beside it.
	if err := srv.Spawn("csimigrate-controller-dry", envBin, append(args, "-identity", "cephtest-dry", "-dry-run")...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("csimigrate controller -dry-run:\n%s", srv.Logs("csimigrate-controller-dry"))
		}
	})
	poll(t, 60*time.Second, "the dry run's verdict on the PV", func() (bool, string) {
		evs, err := srv.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=PersistentVolume,involvedObject.name=" + pv + ",reason=WouldMigrate"})
		if err != nil || len(evs.Items) == 0 {
			return false, fmt.Sprintf("no WouldMigrate Event yet (%v)", err)
		}
		msg := evs.Items[0].Message
		if !strings.Contains(msg, "would write to Ceph") || !strings.Contains(msg, "setomapval csi.volumes.default csi.volume."+pv) {
			t.Fatalf("the dry run's verdict does not name the journal writes the adoption makes: %q", msg)
		}
		return true, msg
	})
	if err := srv.Spawn("csimigrate-controller", envBin, append(args, "-identity", "cephtest")...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("csimigrate controller:\n%s", srv.Logs("csimigrate-controller"))
		}
	})
	poll(t, 120*time.Second, "the controller to rewrite the PV and replace the class", func() (bool, string) {
		p, err := srv.Client.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		class, err := srv.Client.StorageV1().StorageClasses().Get(ctx, sc, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		done := p.Spec.CSI != nil && p.Annotations[rewrite.AnnReclaimPolicy] == "" && class.Provisioner == "rbd.csi.ceph.com"
		return done, fmt.Sprintf("pv csi %t, annotations %v; class provisioner %s", p.Spec.CSI != nil, p.Annotations, class.Provisioner)
	})
}

// adoptChainKubernetes is the chain above on pool, with adopt doing the
// adoption; with rook, on Ceph CSI deployed as Rook deploys it.
func adoptChainKubernetes(t *testing.T, pool string, adopt adoptBy, rook bool) {
	c, d := cephEnv(t)
	// The RBD controller the sidecars and the test call.
	socket, ctrl, ctrlLog := d.RBDSocket, d.RBD, func() string { return d.Log("cephcsi-rbd") }
	if rook {
		r, err := c.StartRBDController(context.Background(), rookRBDDriver)
		if err != nil {
			t.Fatalf("Ceph CSI as %s: %v", rookRBDDriver, err)
		}
		t.Cleanup(r.Stop)
		socket, ctrl, ctrlLog = r.Socket, r, r.Log
	}
	snapDir, err := snapshotterDir()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := "default"
	createPool(t, c, pool)
	dir := t.TempDir()
	data := make([]byte, dataSize)
	_, _ = rand.Read(data)
	if err := os.WriteFile(filepath.Join(dir, "data"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	image := "kubernetes-dynamic-pvc-" + NewUUID()
	if _, err := c.RBD(ctx, "import", "--image-format", "2", "--image-feature", "layering", filepath.Join(dir, "data"), pool+"/"+image); err != nil {
		t.Fatal(err)
	}

	var logs bytes.Buffer
	srv, err := testenv.Start(&logs)
	if err != nil {
		t.Fatalf("kube-apiserver: %v\n%s", err, logs.String())
	}
	t.Cleanup(srv.Stop)
	if err := srv.StartControllerManager(&logs, testenv.VolumeControllers...); err != nil {
		t.Fatal(err)
	}
	kc, err := srv.WriteKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	// The VolumeSnapshot CRDs as external-snapshotter's client module
	// ships them.
	createCRDs(t, dyn, filepath.Join(snapDir, "crd"), 3)
	poll(t, 30*time.Second, "the VolumeSnapshot API", func() (bool, string) {
		_, err := dyn.Resource(snapshotGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		return err == nil, fmt.Sprint(err)
	})
	prov, err := provisionerBinary()
	if err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"csi-provisioner": {prov, "--csi-address=" + socket, "--kubeconfig=" + kc, "--leader-election=false", "--timeout=60s",
			"--immediate-topology=false", "--retry-interval-start=1s", "--retry-interval-max=5s", "--v=4"},
		"csi-snapshotter":     {filepath.Join(snapDir, "csi-snapshotter"), "--csi-address=" + socket, "--kubeconfig=" + kc, "--leader-election=false", "--timeout=60s", "--v=4"},
		"snapshot-controller": {filepath.Join(snapDir, "snapshot-controller"), "--kubeconfig=" + kc, "--leader-election=false", "--v=4"},
	} {
		if err := srv.Spawn(name, args[0], args[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range []string{"csi-provisioner", "csi-snapshotter", "snapshot-controller", "kube-controller-manager"} {
				t.Logf("%s:\n%s", n, srv.Logs(n))
			}
			t.Logf("Ceph CSI's RBD controller:\n%s", ctrlLog())
		}
	})
	cs := srv.Client

	// The cluster before: an in-tree class making layering images, its
	// secret, a bound claim; and the Secret Ceph CSI's snapshotter reads.
	secret := &v1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: "ceph-admin", Namespace: ns},
		Type: "kubernetes.io/rbd", Data: map[string][]byte{"key": []byte(c.AdminKey)}}
	csiSecret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "csi-rbd", Namespace: ns}, StringData: map[string]string{"userID": "admin", "userKey": c.AdminKey}}
	sc := inTreeRBDClass("rbd", pool, secret.Name)
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: &sc.Name,
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: *resource.NewQuantity(dataSize, resource.BinarySI)}}}}
	pv := inTreeRBDPV("pvc-"+NewUUID(), rbdCase{Monitors: []string{MonitorV1}, Pool: pool, Image: image}, "admin", secret.Name)
	pv.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: *resource.NewQuantity(dataSize, resource.BinarySI)}
	pv.Spec.StorageClassName = sc.Name
	pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: claim.Name}
	for _, create := range []func() error{
		func() error {
			_, err := cs.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().Secrets(ns).Create(ctx, csiSecret, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{})
			return err
		},
	} {
		mustCreate(t, create)
	}
	waitBound(t, cs, ns, claim.Name, pv.Name)
	configure(t, d, sc, pv, secret)
	cfgFile := filepath.Join(dir, "config.json")
	cfg, err := os.ReadFile(CephCSIConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgFile, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	if rook {
		cfg = rookConfig(t, ceph.EntryFor([]string{MonitorV1}))
		installRook(t, cs, cfg)
		if err := d.SetConfig(cfg); err != nil {
			t.Fatal(err)
		}
		cfgFile = ""
		// The plan, reading Ceph, says the adoption joins Rook's entry.
		if f := (&adoptEnv{c: c, kc: kc}).forms(t)[pv.Name]; f.Form != "native" || f.AdoptClusterID != "rook-ceph" {
			t.Errorf("plan -read-ceph: form %s, adoption's clusterID %q, want native and rook-ceph:\n%s", f.Form, f.AdoptClusterID, strings.Join(f.FormWhy, "\n"))
		}
	}

	// The rewrite, with adoption.
	adopt(t, srv, kc, c.Conf, cfgFile, pv.Name, sc.Name)
	waitBound(t, cs, ns, claim.Name, pv.Name)
	migrated, err := cs.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(migrated.Spec.CSI.VolumeHandle, "0001-") || migrated.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
		t.Fatalf("the migrated PV: handle %s, policy %s; want a native volume ID and Delete", migrated.Spec.CSI.VolumeHandle, migrated.Spec.PersistentVolumeReclaimPolicy)
	}
	j := journalOfPV(t, migrated)
	clusterID := migrated.Spec.CSI.VolumeAttributes["clusterID"]
	if rook && (clusterID != "rook-ceph" || migrated.Spec.CSI.Driver != rookRBDDriver) {
		t.Fatalf("the migrated PV: driver %s, clusterID %s; want %s and Rook's entry, rook-ceph", migrated.Spec.CSI.Driver, clusterID, rookRBDDriver)
	}

	// A VolumeSnapshot of the migrated claim.
	snapClass := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
		"metadata": map[string]any{"name": "rbd"}, "driver": migrated.Spec.CSI.Driver, "deletionPolicy": "Delete",
		"parameters": map[string]any{"clusterID": clusterID, "csi.storage.k8s.io/snapshotter-secret-name": csiSecret.Name,
			"csi.storage.k8s.io/snapshotter-secret-namespace": ns}}}
	if _, err := dyn.Resource(snapshotClassGVR).Create(ctx, snapClass, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	snap := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
		"metadata": map[string]any{"name": "snap", "namespace": ns},
		"spec":     map[string]any{"volumeSnapshotClassName": "rbd", "source": map[string]any{"persistentVolumeClaimName": claim.Name}}}}
	if _, err := dyn.Resource(snapshotGVR).Namespace(ns).Create(ctx, snap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 120*time.Second, "the VolumeSnapshot to be ReadyToUse", func() (bool, string) {
		u, err := dyn.Resource(snapshotGVR).Namespace(ns).Get(ctx, "snap", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready, _, _ := unstructured.NestedBool(u.Object, "status", "readyToUse")
		return ready, fmt.Sprint(u.Object["status"])
	})

	// A claim restored from it and a claim cloned from the migrated one,
	// on the class csimigrate replaced.
	fromSource := func(name string, src *v1.TypedLocalObjectReference) string {
		t.Helper()
		cl := claim.DeepCopy()
		cl.Name, cl.Spec.VolumeName, cl.Spec.DataSource = name, "", src
		if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, cl, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var vol string
		poll(t, 120*time.Second, "claim "+name+" to be provisioned and bound", func() (bool, string) {
			p, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			vol = p.Spec.VolumeName
			return p.Status.Phase == v1.ClaimBound, string(p.Status.Phase)
		})
		p, err := cs.CoreV1().PersistentVolumes().Get(ctx, vol, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Spec.CSI.VolumeAttributes["imageName"]
	}
	apiGroup := "snapshot.storage.k8s.io"
	restored := fromSource("restored", &v1.TypedLocalObjectReference{APIGroup: &apiGroup, Kind: "VolumeSnapshot", Name: "snap"})
	cloned := fromSource("cloned", &v1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: claim.Name})
	for what, img := range map[string]string{"the restored claim": restored, "the cloned claim": cloned} {
		path := filepath.Join(dir, "export-"+img)
		if _, err := c.RBD(ctx, "export", pool+"/"+img, path); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) < dataSize || !bytes.Equal(got[:dataSize], data) {
			t.Errorf("%s's image %s does not hold the original bytes", what, img)
		}
	}

	// Everything deleted through Kubernetes: the copies, the snapshot, and
	// the migrated claim, whose volume external-provisioner deletes
	// (reclaim policy Delete) with its journal entry.
	for _, n := range []string{"restored", "cloned"} {
		if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := dyn.Resource(snapshotGVR).Namespace(ns).Delete(ctx, "snap", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 120*time.Second, "the copies and the snapshot to be deleted", func() (bool, string) {
		contents, err := dyn.Resource(snapshotContentGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		imgs := images(t, c, pool)
		_, r := imgs[restored]
		_, cl := imgs[cloned]
		return len(contents.Items) == 0 && !r && !cl, fmt.Sprintf("%d contents, restored image %t, cloned image %t", len(contents.Items), r, cl)
	})
	if rook {
		// From here on the driver has Rook's entry only: the adopted
		// volume, which names it, needs no migration entry.
		if err := d.SetConfig(rookConfig(t)); err != nil {
			t.Fatal(err)
		}
	}
	// Expansion, as external-resizer sends it (the PV's
	// controllerExpandSecretRef).
	ref := migrated.Spec.CSI.ControllerExpandSecretRef
	expandSecret, err := cs.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec := map[string]string{}
	for k, v := range expandSecret.Data {
		sec[k] = string(v)
	}
	if _, err := ctrl.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: migrated.Spec.CSI.VolumeHandle,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 2 * dataSize}, Secrets: sec, VolumeCapability: mountCap("ext4")}); err != nil {
		t.Fatalf("ControllerExpandVolume with the PV's controllerExpandSecretRef: %v", err)
	}
	if got := images(t, c, pool)[image]; got != 2*dataSize {
		t.Errorf("image size %d after the expansion, want %d", got, 2*dataSize)
	}

	if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 120*time.Second, "external-provisioner to delete the migrated PV", func() (bool, string) {
		p, err := cs.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, string(p.Status.Phase) + " " + p.Status.Message
	})
	if _, ok := images(t, c, pool)[image]; ok {
		t.Errorf("%s/%s is still listed after its claim was deleted", pool, image)
	}
	env := &adoptEnv{c: c, tools: cephToolsOf(c)}
	if st := env.journal(t, j); st != "absent" {
		t.Errorf("the journal entry after the deletion: %s", st)
	}
}

package cephtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/nodetest"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/secrets"
)

// journey is one cluster's state through TestCephJourneyUpgrade130To137.
type journey struct {
	t    *testing.T
	c    *Cluster
	d    *Drivers
	srv  *testenv.Server
	cs   kubernetes.Interface
	kc   string
	pool string
	ctx  context.Context
	logs bytes.Buffer
	// file is the dump's path, review the review's; ran are the
	// commands run, as docs/upgrade.md words them (record).
	file, review string
	ran          map[string]bool
}

// The journey's objects (namespace default).
const (
	jNS         = "default"
	jClass      = "journey-rbd"     // in-tree RBD class a Helm release keeps
	jRBD        = "journey-rbd"     // dynamic RBD PV (Delete), claim rbd-data, in use online
	jCephFS     = "journey-cephfs"  // static CephFS PV (Retain), claim fs-data
	jLeft       = "journey-left"    // RBD PV left in-tree: the negative control
	jAdopt      = "journey-adopt"   // RBD PV of the class, not in use: adopted
	jStatic     = "journey-static"  // static RBD PV (Retain, no class)
	jFSUser     = "journey"         // the CephFS volume's Ceph user
	jFSDir      = "volumes/journey" // its directory
	jFSContent  = "written on 1.30 through the in-tree plugin's volume\n"
	jNode1      = "node1"
	jNode2      = "node2"
	jCephFSFile = "hello.txt"
)

// TestCephJourneyUpgrade130To137 is the user's whole job on one cluster, as
// the README and the plan tell it: a Kubernetes 1.30.14 control plane and
// hollow kubelet with in-tree RBD and CephFS volumes in use, Ceph and Ceph
// CSI with external-provisioner; `dump`, `plan`, the plan's steps (its
// feature gates, the Ceph CSI config it prints, the pods it says to stop,
// the kept class's source), `rewrite -apply -online`; then the control
// plane and kubelets stopped and Kubernetes 1.37.2 started on the same etcd
// data (the test skips 1.31 to 1.36, which users must not: Kubernetes
// upgrades one minor release at a time; 1.31 is the release that removed
// the in-tree RBD and CephFS plugins, and 1.37 has none either). After the
// upgrade every claim is still bound to the same PV, the pod that ran
// still runs, no VolumeAttachment is left for a handle no PV has, and
// neither kube-controller-manager nor the kubelets log an error about the
// rewritten volumes; through the drivers, a pod on another node attaches
// the RBD volume, Ceph CSI stages the CephFS volume through ceph-fuse and
// its file is there, the RBD volume expands, its deletion deletes the
// image, and a claim on the replaced class provisions. The negative
// control is the PV the rewrite was not told to take: on 1.37 its pod
// cannot start, as the plan's step said ("they do not mount until then"),
// and rewriting it then (its pod stopped) lets a new pod run.
func TestCephJourneyUpgrade130To137(t *testing.T) {
	c, d := cephEnv(t)
	j := &journey{t: t, c: c, d: d, pool: "kube.journey", ctx: context.Background(), ran: map[string]bool{}}
	createPool(t, c, j.pool)
	rbdImage, leftImage, staticImage, inlineImage := "kubernetes-dynamic-pvc-"+NewUUID(), "kubernetes-dynamic-pvc-"+NewUUID(), "static-"+NewUUID(), "inline-"+NewUUID()
	for _, img := range []string{rbdImage, leftImage, staticImage, inlineImage} {
		if _, err := c.RBD(callCtx(t), "create", "--size", "64M", "--image-feature", "layering", j.pool+"/"+img); err != nil {
			t.Fatal(err)
		}
	}
	// The adopted volume's image holds data, compared after the restore.
	adoptImage, data := "kubernetes-dynamic-pvc-"+NewUUID(), make([]byte, dataSize)
	_, _ = rand.Read(data)
	dataFile := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(dataFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RBD(callCtx(t), "import", "--image-format", "2", "--image-feature", "layering", dataFile, j.pool+"/"+adoptImage); err != nil {
		t.Fatal(err)
	}
	fsKey := j.cephFSDir()

	j.start130()
	j.create(map[string]string{jRBD: rbdImage, jLeft: leftImage, jAdopt: adoptImage, jStatic: staticImage}, fsKey)
	for _, p := range []struct{ name, claim string }{{"rbd-app", "rbd-data"}, {"fs-app", "fs-data"}, {"left-app", "left-data"}} {
		j.runPod(p.name, jNode1, p.claim)
	}
	// A pod with an inline RBD volume (the kubelet migrates it as CSI).
	inline := testenv.PodOn(jNS, "inline-app", jNode1, "")
	inline.Spec.Volumes[0].VolumeSource = v1.VolumeSource{RBD: &v1.RBDVolumeSource{CephMonitors: []string{MonitorV1}, RBDPool: j.pool, RBDImage: inlineImage,
		RadosUser: "admin", FSType: "ext4", SecretRef: &v1.LocalObjectReference{Name: "ceph-admin"}}}
	if _, err := j.cs.CoreV1().Pods(jNS).Create(j.ctx, inline, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitPodRunning(t, j.cs, jNS, inline.Name, 90*time.Second)

	// dump, then plan, as the README says.
	dump := j.csimigrate(0, "dump", "-kubeconfig", j.kc)
	j.file = filepath.Join(t.TempDir(), "cluster.json")
	if err := os.WriteFile(j.file, []byte(dump), 0o600); err != nil {
		t.Fatal(err)
	}
	p := j.plan("-f", j.file)
	if p.KubernetesMinor != 30 || p.ServerVersion != testenv.V1_30.Version {
		t.Errorf("the plan of the dump is for 1.%d (%s), want the release the dump recorded, %s", p.KubernetesMinor, p.ServerVersion, testenv.V1_30.Version)
	}
	// The plan's Ceph CSI config: what the drivers (and the cluster's
	// config map) are given.
	configure(t, d, j.objects()...)
	serveDriverConfig(t, j.cs)
	if !strings.Contains(strings.Join(p.FeatureGates, "\n"), "CSIMigrationRBD=true on kube-controller-manager") {
		t.Errorf("the plan's feature-gate steps do not set CSIMigrationRBD (this cluster runs them): %q", p.FeatureGates)
	}
	for _, v := range p.Volumes {
		if v.Name == jCephFS && !strings.Contains(strings.Join(v.InUseBy, ","), "fs-app") {
			t.Errorf("the plan does not name fs-app as using %s: %+v", jCephFS, v)
		}
	}
	// A pod's volumes cannot change: the plan says to move it, with the
	// claim of its translation.
	if len(p.InlineVolumes) != 1 || p.InlineVolumes[0].Workload != "Pod "+jNS+"/inline-app" || p.InlineVolumes[0].Claim != "inline-app-data" {
		t.Errorf("the plan's inline volumes: %+v", p.InlineVolumes)
	}
	kept := false
	for _, s := range p.StorageClasses {
		kept = kept || (s.Name == jClass && s.Kept != nil && s.Source != nil && s.Source.Provisioner == plugin.RBDDriverName)
	}
	if !kept {
		t.Fatalf("the plan does not name the Helm release that keeps class %s with its new form: %+v", jClass, p.StorageClasses)
	}

	// The plan's steps: the Secrets it lists created as it says (a field
	// "name=value" literally, the others from the source Secret's key),
	// the CephFS pod stopped (no kubelet migrates
	// CephFS: not online), the class's chart given the printed form
	// (-source-changed), the rewrite online under the RBD pod. The PV
	// jLeft is not named: the negative control.
	j.createSecrets(p.Secrets)
	inlinePV := j.moveInline("inline-app")
	j.deletePod("fs-app")
	// The plan of the cluster itself, ready now but for the PV left
	// in-tree on purpose and what the rewrite will adopt.
	if again := j.plan("-kubeconfig", j.kc); slices.ContainsFunc(again.Secrets, func(s plan.SecretPlan) bool { return s.Action == "create" }) {
		t.Errorf("the plan still lists Secrets to create: %+v", again.Secrets)
	}
	// The review of the cluster as it is now, with the run's options and
	// targets, then the run given the review: what it prints is what the
	// run does.
	args := []string{"-online", "-adopt", "-ceph-conf", c.Conf, "-kubeconfig", j.kc, "-source-changed", "storageclass/" + jClass, jRBD, jCephFS, jAdopt, jStatic, "storageclass/" + jClass}
	review := j.csimigrate(0, append([]string{"rewrite"}, args...)...)
	for _, pv := range []string{jRBD, jCephFS, jAdopt, jStatic} {
		if !strings.Contains(review, "rewrite_pv "+pv+" ") {
			t.Errorf("the review has no step of %s:\n%s", pv, review)
		}
	}
	j.saveReview(review)
	out := j.csimigrate(0, append([]string{"rewrite", "-apply", "-review", j.review}, args...)...)
	t.Logf("rewrite -apply on 1.30:\n%s", out)
	rbdPV, fsPV, adopted, static := j.pv(jRBD), j.pv(jCephFS), j.pv(jAdopt), j.pv(jStatic)
	if rbdPV.Spec.CSI == nil || fsPV.Spec.CSI == nil || static.Spec.CSI == nil || rbdPV.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete ||
		static.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain {
		t.Fatalf("not rewritten: %+v\n%+v\n%+v", rbdPV.Spec, fsPV.Spec, static.Spec)
	}
	// The unused volume of the class is the driver's own (a native volume
	// ID); the one in use keeps its migration handle (adopted once its pods
	// stop, as the plan says).
	if adopted.Spec.CSI == nil || !strings.HasPrefix(adopted.Spec.CSI.VolumeHandle, "0001-") || strings.HasPrefix(rbdPV.Spec.CSI.VolumeHandle, "0001-") {
		t.Fatalf("adoption: %s has handle %+v, %s %s", jAdopt, adopted.Spec.CSI, jRBD, rbdPV.Spec.CSI.VolumeHandle)
	}
	testenv.WaitPodRunning(t, j.cs, jNS, "rbd-app", 30*time.Second)
	// The runbook's check before the upgrade: every claim Bound (the
	// rewrite waited for kube-controller-manager to bind them again).
	for claim, pv := range map[string]string{"rbd-data": jRBD, "fs-data": jCephFS, "adopt-data": jAdopt, "static-data": jStatic} {
		if c, err := j.cs.CoreV1().PersistentVolumeClaims(jNS).Get(j.ctx, claim, metav1.GetOptions{}); err != nil || c.Status.Phase != v1.ClaimBound || c.Spec.VolumeName != pv {
			t.Errorf("claim %s after the rewrite: %v %+v", claim, err, c.Status)
		}
	}

	// The upgrade, on the same etcd.
	j.upgrade137()
	for claim, pv := range map[string]string{"rbd-data": jRBD, "fs-data": jCephFS, "left-data": jLeft, "adopt-data": jAdopt, "static-data": jStatic} {
		waitBound(t, j.cs, jNS, claim, pv)
	}
	testenv.WaitPodRunning(t, j.cs, jNS, "rbd-app", 90*time.Second)
	testenv.WaitPodRunning(t, j.cs, jNS, "inline-app", 90*time.Second)
	testenv.CheckAttachments(t, j.cs)
	// The negative control: the in-tree PV's pod cannot start (its
	// containers never become ready: the kubelet finds no plugin for the
	// volume), and kube-controller-manager finds no attacher for it.
	j.waitNotReady("left-app")
	testenv.LogHas(t, j.srv.LogPath("hollow-node-"+jNode1), `no volume plugin matched`, jLeft)
	testenv.LogHas(t, j.srv.LogPath("kube-controller-manager"), `no attacher interface found`, jLeft)
	// Nothing but the negative control is an error of the new control
	// plane or kubelets.
	for _, log := range []string{"kube-controller-manager", "hollow-node-" + jNode1, "hollow-node-" + jNode2} {
		testenv.NoErrorsAbout(t, j.srv.LogPath(log), jRBD, jCephFS, jAdopt, jStatic, inlinePV, "rbd-data", "fs-data", "adopt-data", "static-data", "inline-app-data")
	}
	after := j.plan("-kubeconfig", j.kc)
	if after.KubernetesMinor != 37 {
		t.Errorf("the plan after the upgrade is for 1.%d, want the release it read, 1.37", after.KubernetesMinor)
	}
	if steps := strings.Join(after.FeatureGates, "\n"); !strings.Contains(steps, "they do not mount until then") {
		t.Errorf("the plan on 1.37 does not say the in-tree PVs do not mount: %q", steps)
	}
	// No undo to a release without the plugin.
	if out, code := j.run("rewrite", "-apply", "-undo", "-kubeconfig", j.kc, jRBD); code == 0 || !strings.Contains(out, "1.31 removed the in-tree plugin kubernetes.io/rbd") {
		t.Errorf("undo on 1.37: exit %d:\n%s", code, out)
	}

	// The volumes through the drivers, on 1.37.
	j.deletePod("rbd-app")
	j.runPod("rbd-app2", jNode2, "rbd-data")
	rbdPV = j.pv(jRBD)
	if va := j.attachment(rbdPV, jNode2); va == nil || !va.Status.Attached {
		t.Errorf("no attached VolumeAttachment of %s on %s named for its handle: %+v", jRBD, jNode2, va)
	}
	j.runPod("fs-app2", jNode2, "fs-data")
	j.stageCephFS(j.pv(jCephFS))
	j.expand(rbdPV, rbdImage)
	j.snapshotRestore(j.pv(jAdopt), "adopt-data", data)
	j.runPod("static-app", jNode2, "static-data")
	// The negative control's remedy: its pod stopped, the rewrite on
	// 1.37, a new pod runs.
	j.deletePod("left-app")
	j.saveReview(j.csimigrate(0, "rewrite", "-kubeconfig", j.kc, jLeft))
	j.csimigrate(0, "rewrite", "-apply", "-review", j.review, "-kubeconfig", j.kc, jLeft)
	j.runPod("left-app2", jNode2, "left-data")
	// Delete through Ceph CSI; a new claim on the replaced class.
	j.deletePod("rbd-app2")
	j.deleteClaim("rbd-data", jRBD, rbdImage)
	j.provision(jClass, j.pv(jLeft).Spec.Capacity)
	j.runbookRan()
	if t.Failed() {
		t.Logf("kube-controller-manager:\n%s\nhollow-node-%s:\n%s", j.srv.Logs("kube-controller-manager"), jNode2, j.srv.Logs("hollow-node-"+jNode2))
	}
}

// cephFSDir makes the CephFS volume's directory with a file, authorizes
// its user there, and returns the user's key.
func (j *journey) cephFSDir() string {
	mnt := adminMount(j.t, j.c)
	if err := os.MkdirAll(filepath.Join(mnt, jFSDir), 0o755); err != nil {
		j.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, jFSDir, jCephFSFile), []byte(jFSContent), 0o644); err != nil {
		j.t.Fatal(err)
	}
	ctx := callCtx(j.t)
	if _, err := j.c.Ceph(ctx, "fs", "authorize", FSName, "client."+jFSUser, "/"+jFSDir, "rw"); err != nil {
		j.t.Fatal(err)
	}
	key, err := j.c.Ceph(ctx, "auth", "get-key", "client."+jFSUser)
	if err != nil {
		j.t.Fatal(err)
	}
	return strings.TrimSpace(key)
}

// start130 starts the 1.30 control plane with CSIMigrationRBD on (the
// plan's feature-gate steps for this cluster), a hollow kubelet with the
// drivers' node plugins, and external-provisioner on Ceph CSI's RBD
// controller.
func (j *journey) start130() {
	t := j.t
	srv := j.startServer(testenv.V1_30)
	// The CSIDrivers as Ceph CSI's deployment has them: RBD attaches,
	// CephFS does not.
	if err := srv.RemoveCSIDrivers(plugin.RBDDriverName, plugin.CephFSDriverName); err != nil {
		t.Fatal(err)
	}
	for name, attach := range map[string]bool{plugin.RBDDriverName: true, plugin.CephFSDriverName: false} {
		if _, err := j.cs.StorageV1().CSIDrivers().Create(j.ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: storagev1.CSIDriverSpec{AttachRequired: &attach}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	j.startComponents("CSIMigrationRBD=true", jNode1)
	j.startProvisioner()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// external-attacher's part: RBD VolumeAttachments marked attached
	// (the API server keeps its address across the upgrade).
	testenv.PlayAttacher(ctx, t, j.cs, plugin.RBDDriverName)
}

// startServer starts etcd and kube-apiserver of release r, stopped when
// the test ends, with the journey's client and kubeconfig.
func (j *journey) startServer(r testenv.Release) *testenv.Server {
	srv, err := testenv.StartRelease(&j.logs, r)
	if err != nil {
		j.t.Fatalf("kube-apiserver %s: %v\n%s", r.Version, err, j.logs.String())
	}
	j.t.Cleanup(srv.Stop)
	j.srv, j.cs = srv, srv.Client
	if j.kc, err = srv.WriteKubeconfig(); err != nil {
		j.t.Fatal(err)
	}
	return srv
}

// startComponents starts, of the server's release, kube-controller-manager
// (the volume controllers and the attach/detach controller) and a hollow
// kubelet per node with the drivers' node plugins registered, with the
// feature gates ("" none).
func (j *journey) startComponents(gates string, nodes ...string) {
	t := j.t
	flags := []string{"--attach-detach-reconcile-sync-period=10s"}
	if gates != "" {
		flags = append(flags, "--feature-gates="+gates)
	}
	if err := j.srv.StartControllerManagerFlags(&j.logs, flags, append(append([]string(nil), testenv.VolumeControllers...), "persistentvolume-attach-detach-controller")...); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		root, err := j.srv.StartHollowNode(&j.logs, n, gates)
		if err != nil {
			t.Fatal(err)
		}
		for _, drv := range []string{plugin.RBDDriverName, plugin.CephFSDriverName} {
			nodetest.StartNodePlugin(t, root, drv, n)
		}
	}
}

// startProvisioner starts external-provisioner on Ceph CSI's RBD
// controller; it keeps running through the upgrade, as the driver's pods
// do.
func (j *journey) startProvisioner() {
	t := j.t
	prov, err := provisionerBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := j.srv.Spawn("csi-provisioner", prov, "--csi-address="+j.d.RBDSocket, "--kubeconfig="+j.kc, "--leader-election=false",
		"--timeout=60s", "--immediate-topology=false", "--retry-interval-start=1s", "--retry-interval-max=5s"); err != nil {
		t.Fatal(err)
	}
}

// upgrade137 stops the 1.30 control plane and kubelet and starts 1.37.2's
// on the same etcd data, with a second node (the drivers and
// external-provisioner keep running), and external-snapshotter.
func (j *journey) upgrade137() {
	if err := j.srv.Upgrade(&j.logs, testenv.V1_37); err != nil {
		j.t.Fatalf("upgrading to %s: %v\n%s", testenv.V1_37.Version, err, j.logs.String())
	}
	j.startComponents("", jNode1, jNode2)
	// external-snapshotter, with the VolumeSnapshot CRDs its client
	// module ships.
	snapDir, err := snapshotterDir()
	if err != nil {
		j.t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(j.srv.Config)
	if err != nil {
		j.t.Fatal(err)
	}
	createCRDs(j.t, dyn, filepath.Join(snapDir, "crd"), 3)
	poll(j.t, 30*time.Second, "the VolumeSnapshot API", func() (bool, string) {
		_, err := dyn.Resource(snapshotGVR).Namespace(jNS).List(j.ctx, metav1.ListOptions{})
		return err == nil, fmt.Sprint(err)
	})
	for name, args := range map[string][]string{
		"csi-snapshotter":     {filepath.Join(snapDir, "csi-snapshotter"), "--csi-address=" + j.d.RBDSocket, "--kubeconfig=" + j.kc, "--leader-election=false", "--timeout=60s"},
		"snapshot-controller": {filepath.Join(snapDir, "snapshot-controller"), "--kubeconfig=" + j.kc, "--leader-election=false"},
	} {
		if err := j.srv.Spawn(name, args[0], args[1:]...); err != nil {
			j.t.Fatal(err)
		}
	}
}

// objects are the journey's in-tree objects as created.
func (j *journey) objects() []runtime.Object {
	var out []runtime.Object
	for _, name := range []string{jRBD, jCephFS, jLeft} {
		pv := j.pv(name)
		pv.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"}
		out = append(out, pv)
	}
	sc, err := j.cs.StorageV1().StorageClasses().Get(j.ctx, jClass, metav1.GetOptions{})
	if err != nil {
		j.t.Fatal(err)
	}
	sc.TypeMeta = metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"}
	return append(out, sc)
}

// create makes the journey's in-tree objects: the Helm-kept class and its
// admin secret, the two RBD PVs of the class and the CephFS PV, each bound
// to its claim.
func (j *journey) create(images map[string]string, fsKey string) {
	t := j.t
	admin := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ceph-admin", Namespace: jNS}, Type: "kubernetes.io/rbd", Data: map[string][]byte{"key": []byte(j.c.AdminKey)}}
	fsSecret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cephfs-journey", Namespace: "apps"}, Data: map[string][]byte{"key": []byte(fsKey)}}
	sc := inTreeRBDClass(jClass, j.pool, admin.Name)
	sc.Labels = map[string]string{"app.kubernetes.io/managed-by": "Helm"}
	sc.Annotations = map[string]string{"meta.helm.sh/release-name": "storage", "meta.helm.sh/release-namespace": "infra"}
	mustCreate(t, func() error {
		_, err := j.cs.CoreV1().Namespaces().Create(j.ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}, metav1.CreateOptions{})
		return err
	})
	// No service-account controller runs: the account pods need.
	mustCreate(t, func() error {
		_, err := j.cs.CoreV1().ServiceAccounts(jNS).Create(j.ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		return err
	})
	// The Secret Ceph CSI's snapshotter reads (the VolumeSnapshotClass's).
	csiSecret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "csi-rbd", Namespace: jNS}, StringData: map[string]string{"userID": "admin", "userKey": j.c.AdminKey}}
	for _, s := range []*v1.Secret{admin, fsSecret, csiSecret} {
		mustCreate(t, func() error {
			_, err := j.cs.CoreV1().Secrets(s.Namespace).Create(j.ctx, s, metav1.CreateOptions{})
			return err
		})
	}
	mustCreate(t, func() error {
		_, err := j.cs.StorageV1().StorageClasses().Create(j.ctx, sc, metav1.CreateOptions{})
		return err
	})
	rbd := func(name string) *v1.PersistentVolume {
		return inTreeRBDPV(name, rbdCase{Monitors: []string{MonitorV1}, Pool: j.pool, Image: images[name]}, "admin", admin.Name)
	}
	adopt := rbd(jAdopt)
	adopt.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: *resource.NewQuantity(dataSize, resource.BinarySI)}
	// A static volume: made by hand, Retain, no class.
	static := rbd(jStatic)
	static.Annotations, static.Spec.PersistentVolumeReclaimPolicy = nil, v1.PersistentVolumeReclaimRetain
	for _, v := range []struct {
		pv    *v1.PersistentVolume
		claim string
	}{
		{rbd(jRBD), "rbd-data"}, {rbd(jLeft), "left-data"}, {adopt, "adopt-data"}, {static, "static-data"},
		{inTreeCephFSPV(jCephFS, "/"+jFSDir, jFSUser, fsSecret.Name), "fs-data"},
	} {
		class := ""
		if v.pv.Spec.RBD != nil && v.pv.Name != jStatic {
			class = sc.Name
		}
		v.pv.Spec.StorageClassName = class
		v.pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: jNS, Name: v.claim}
		claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: v.claim, Namespace: jNS},
			Spec: v1.PersistentVolumeClaimSpec{AccessModes: v.pv.Spec.AccessModes, StorageClassName: &class, VolumeName: v.pv.Name,
				Resources: v1.VolumeResourceRequirements{Requests: v.pv.Spec.Capacity}}}
		mustCreate(t, func() error {
			_, err := j.cs.CoreV1().PersistentVolumes().Create(j.ctx, v.pv, metav1.CreateOptions{})
			return err
		})
		mustCreate(t, func() error {
			_, err := j.cs.CoreV1().PersistentVolumeClaims(jNS).Create(j.ctx, claim, metav1.CreateOptions{})
			return err
		})
		waitBound(t, j.cs, jNS, v.claim, v.pv.Name)
	}
}

// moveInline moves the pod's inline volume to a PV as the plan says:
// `translate` prints the CSI PV, the claim bound to it and the pod using the
// claim; the pod is deleted and the three created (a pod's volumes cannot
// change in place). It returns the PV's name, once the new pod runs.
func (j *journey) moveInline(pod string) string {
	t := j.t
	out := j.csimigrate(0, "translate", "-f", j.file, "-o", "json")
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("translate -o json: %v\n%s", err, out)
	}
	var pv *v1.PersistentVolume
	var claim *v1.PersistentVolumeClaim
	var moved *v1.Pod
	for _, item := range list.Items {
		var meta metav1.TypeMeta
		if json.Unmarshal(item, &meta) != nil {
			continue
		}
		switch meta.Kind {
		case "PersistentVolume":
			var p v1.PersistentVolume
			if json.Unmarshal(item, &p) == nil && p.Annotations["csimigrate.io/inline-volume-of"] != "" {
				pv = &p
			}
		case "PersistentVolumeClaim":
			claim = &v1.PersistentVolumeClaim{}
			_ = json.Unmarshal(item, claim)
		case "Pod":
			moved = &v1.Pod{}
			_ = json.Unmarshal(item, moved)
		}
	}
	if pv == nil || claim == nil || moved == nil || moved.Name != pod || moved.Spec.Volumes[0].PersistentVolumeClaim == nil {
		t.Fatalf("translate printed no move of %s's inline volume:\n%s", pod, out)
	}
	j.deletePod(pod)
	mustCreate(t, func() error {
		_, err := j.cs.CoreV1().PersistentVolumes().Create(j.ctx, pv, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := j.cs.CoreV1().PersistentVolumeClaims(claim.Namespace).Create(j.ctx, claim, metav1.CreateOptions{})
		return err
	})
	waitBound(t, j.cs, claim.Namespace, claim.Name, pv.Name)
	mustCreate(t, func() error {
		_, err := j.cs.CoreV1().Pods(moved.Namespace).Create(j.ctx, moved, metav1.CreateOptions{})
		return err
	})
	testenv.WaitPodRunning(t, j.cs, moved.Namespace, moved.Name, 90*time.Second)
	return pv.Name
}

// createSecrets creates the Secrets the plan says to create, as an admin
// does from its SECRETS section: each field "name=value" as given, a field
// without a value from the key of the Secret it names as the source.
func (j *journey) createSecrets(planned []plan.SecretPlan) {
	t := j.t
	n := 0
	for _, sp := range planned {
		if sp.Action != "create" {
			continue
		}
		s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: sp.Namespace, Name: sp.Name}, Data: map[string][]byte{}}
		for _, f := range sp.Fields {
			if k, v, ok := strings.Cut(f, "="); ok {
				s.Data[k] = []byte(v)
				continue
			}
			ns, name, _ := strings.Cut(sp.From, "/")
			src, err := j.cs.CoreV1().Secrets(ns).Get(j.ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the source %s of Secret %s/%s: %v", sp.From, sp.Namespace, sp.Name, err)
			}
			s.Data[f] = src.Data["key"]
		}
		mustCreate(t, func() error {
			_, err := j.cs.CoreV1().Secrets(s.Namespace).Create(j.ctx, s, metav1.CreateOptions{})
			return err
		})
		n++
	}
	if n != 1 {
		t.Errorf("the plan lists %d Secrets to create, want the CephFS volume's: %+v", n, planned)
	}
}

// runPod runs a pod of claim on node and waits until it runs.
func (j *journey) runPod(name, node, claim string) { testenv.RunPod(j.t, j.cs, jNS, name, node, claim) }

// deletePod deletes a pod and waits until it is gone.
func (j *journey) deletePod(name string) { testenv.DeletePod(j.t, j.cs, jNS, name) }

func (j *journey) pv(name string) *v1.PersistentVolume {
	j.t.Helper()
	pv, err := j.cs.CoreV1().PersistentVolumes().Get(j.ctx, name, metav1.GetOptions{})
	if err != nil {
		j.t.Fatal(err)
	}
	return pv
}

// saveReview writes a review where the journey's next rewrite -apply
// -review reads it (review.sh).
func (j *journey) saveReview(review string) {
	if j.review == "" {
		j.review = filepath.Join(j.t.TempDir(), "review.sh")
	}
	if err := os.WriteFile(j.review, []byte(review), 0o600); err != nil {
		j.t.Fatal(err)
	}
}

// record notes a command run, as docs/upgrade.md words it with the names
// it sets once: without -kubeconfig and -o, the dump as cluster.json, the
// review as review.sh, the journey's PVs as $PVS (the one left in-tree as
// $LEFT), its class as storageclass/$CLASS, Ceph's config as $CEPH_CONF.
func (j *journey) record(args []string) {
	words := []string{"csimigrate"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-kubeconfig" || a == "-o":
			i++
			continue
		case a == j.file:
			a = "cluster.json"
		case a == j.review && a != "":
			a = "review.sh"
		case a == "storageclass/"+jClass:
			a = "storageclass/$CLASS"
		case a == j.c.Conf:
			a = "$CEPH_CONF"
		case a == jLeft:
			a = "$LEFT"
		case a == jRBD || a == jCephFS || a == jAdopt || a == jStatic:
			if words[len(words)-1] == "$PVS" {
				continue
			}
			a = "$PVS"
		}
		words = append(words, a)
	}
	j.ran[strings.Join(words, " ")] = true
}

// runbookRan fails the test for each command of docs/upgrade.md's code
// blocks that the journey did not run (those of its vSphere section are
// the vSphere journey's).
func (j *journey) runbookRan() {
	testenv.PageRan(j.t, "../docs/upgrade.md", "", "## vSphere", j.ran, 5)
}

// run runs the command and returns its combined output and exit status.
func (j *journey) run(args ...string) (string, int) {
	j.record(args)
	out, err := exec.Command(envBin, args...).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		j.t.Fatalf("csimigrate %s: %v", strings.Join(args, " "), err)
	}
	return string(out), 0
}

// csimigrate runs the command, which must exit with code, and returns
// its standard output.
func (j *journey) csimigrate(code int, args ...string) string {
	j.t.Helper()
	j.record(args)
	cmd := exec.Command(envBin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	got := 0
	if ee, ok := err.(*exec.ExitError); ok {
		got = ee.ExitCode()
	} else if err != nil {
		j.t.Fatal(err)
	}
	if got != code {
		j.t.Fatalf("csimigrate %s: exit %d, want %d\n%s\n%s", strings.Join(args, " "), got, code, out, stderr.String())
	}
	return string(out)
}

// plan is `csimigrate plan -o json` with args.
func (j *journey) plan(args ...string) *plan.Plan {
	j.t.Helper()
	j.record(append([]string{"plan"}, args...))
	out, _ := exec.Command(envBin, append([]string{"plan", "-o", "json"}, args...)...).Output()
	var p plan.Plan
	if err := json.Unmarshal(out, &p); err != nil {
		j.t.Fatalf("plan %v: %v\n%s", args, err, out)
	}
	return &p
}

// attachment is the VolumeAttachment of pv's handle on node (nil: none).
func (j *journey) attachment(pv *v1.PersistentVolume, node string) *storagev1.VolumeAttachment {
	var va *storagev1.VolumeAttachment
	poll(j.t, 30*time.Second, "the VolumeAttachment of "+pv.Name+" on "+node, func() (bool, string) {
		var err error
		va, err = j.cs.StorageV1().VolumeAttachments().Get(j.ctx, featuregate.AttachmentName(pv.Spec.CSI.VolumeHandle, pv.Spec.CSI.Driver, node), metav1.GetOptions{})
		return err == nil && va.Status.Attached, fmt.Sprint(err)
	})
	return va
}

// waitNotReady waits until the kubelet reports that the pod cannot start
// its containers (condition PodReadyToStartContainers False: the kubelet
// found the pod without a sandbox after its restart and makes none before
// its volumes are mounted), and checks that it stays so for 20 s.
func (j *journey) waitNotReady(pod string) {
	notReady := func() (bool, string) {
		p, err := j.cs.CoreV1().Pods(jNS).Get(j.ctx, pod, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReadyToStartContainers {
				return c.Status == v1.ConditionFalse, fmt.Sprintf("%s %s %s", c.Status, c.Reason, c.Message)
			}
		}
		return false, fmt.Sprintf("no condition %s: %+v", v1.PodReadyToStartContainers, p.Status.Conditions)
	}
	poll(j.t, 90*time.Second, "pod "+pod+" unable to start its containers", notReady)
	time.Sleep(20 * time.Second)
	if ok, state := notReady(); !ok {
		j.t.Errorf("pod %s ready to start its containers again: %s", pod, state)
	}
}

// stageCephFS stages the rewritten CephFS PV on Ceph CSI's node server as
// the kubelet would (its handle, attributes and the secret its
// nodeStageSecretRef names, read from the API server; ceph-fuse, the
// kernel client cannot mount here) and reads the file written before.
func (j *journey) stageCephFS(pv *v1.PersistentVolume) {
	t := j.t
	ctx := callCtx(t)
	src := pv.Spec.CSI
	if src == nil || src.NodeStageSecretRef == nil {
		t.Fatalf("%s: no CSI source with a node-stage secret: %+v", pv.Name, pv.Spec)
	}
	sec, err := j.cs.CoreV1().Secrets(src.NodeStageSecretRef.Namespace).Get(ctx, src.NodeStageSecretRef.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("nodeStageSecretRef: %v", err)
	}
	staging, target := filepath.Join(t.TempDir(), "staging"), filepath.Join(t.TempDir(), "target")
	if err := os.Mkdir(staging, 0o750); err != nil {
		t.Fatal(err)
	}
	vc := maps.Clone(src.VolumeAttributes)
	vc["mounter"] = "fuse"
	if _, err := j.d.CephFS.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: src.VolumeHandle, StagingTargetPath: staging,
		VolumeCapability: rwx(), VolumeContext: vc, Secrets: secrets.SecretStringData(sec)}); err != nil {
		t.Fatalf("NodeStageVolume of %s on 1.37: %v\n%s", pv.Name, err, j.d.Log("cephcsi-cephfs"))
	}
	defer func() {
		if _, err := j.d.CephFS.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: src.VolumeHandle, StagingTargetPath: staging}); err != nil {
			t.Errorf("NodeUnstageVolume: %v", err)
		}
	}()
	if _, err := j.d.CephFS.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: src.VolumeHandle, StagingTargetPath: staging,
		TargetPath: target, VolumeCapability: rwx(), VolumeContext: src.VolumeAttributes}); err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(target, jCephFSFile))
	if err != nil || string(got) != jFSContent {
		t.Errorf("%s through the staged volume: %q, %v; want %q", jCephFSFile, got, err, jFSContent)
	}
	if _, err := j.d.CephFS.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: src.VolumeHandle, TargetPath: target}); err != nil {
		t.Errorf("NodeUnpublishVolume: %v", err)
	}
}

// expand grows the RBD volume as external-resizer does: the secret named
// by the PV's controllerExpandSecretRef, read from the API server.
func (j *journey) expand(pv *v1.PersistentVolume, image string) {
	t := j.t
	ref := pv.Spec.CSI.ControllerExpandSecretRef
	if ref == nil {
		t.Fatal("the rewritten PV has no controllerExpandSecretRef")
	}
	sec, err := j.cs.CoreV1().Secrets(ref.Namespace).Get(j.ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("controllerExpandSecretRef %s/%s: %v", ref.Namespace, ref.Name, err)
	}
	if _, err := j.d.RBD.ControllerExpandVolume(callCtx(t), &csi.ControllerExpandVolumeRequest{VolumeId: pv.Spec.CSI.VolumeHandle,
		CapacityRange: &csi.CapacityRange{RequiredBytes: expandSize}, Secrets: secrets.SecretStringData(sec), VolumeCapability: mountCap("ext4")}); err != nil {
		t.Fatalf("ControllerExpandVolume: %v", err)
	}
	if got := images(t, j.c, j.pool)[image]; got != expandSize {
		t.Errorf("image size %d after the expansion, want %d", got, expandSize)
	}
}

// snapshotRestore snapshots the adopted volume's claim through
// external-snapshotter and Ceph CSI, restores a claim of the class from the
// snapshot, and checks that its image holds data.
func (j *journey) snapshotRestore(pv *v1.PersistentVolume, claim string, data []byte) {
	t := j.t
	dyn, err := dynamic.NewForConfig(j.srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	class := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
		"metadata": map[string]any{"name": "rbd"}, "driver": pv.Spec.CSI.Driver, "deletionPolicy": "Delete",
		"parameters": map[string]any{"clusterID": pv.Spec.CSI.VolumeAttributes["clusterID"], "csi.storage.k8s.io/snapshotter-secret-name": "csi-rbd",
			"csi.storage.k8s.io/snapshotter-secret-namespace": jNS}}}
	if _, err := dyn.Resource(snapshotClassGVR).Create(j.ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	snap := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
		"metadata": map[string]any{"name": "snap", "namespace": jNS},
		"spec":     map[string]any{"volumeSnapshotClassName": "rbd", "source": map[string]any{"persistentVolumeClaimName": claim}}}}
	if _, err := dyn.Resource(snapshotGVR).Namespace(jNS).Create(j.ctx, snap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 120*time.Second, "the VolumeSnapshot of the adopted volume to be ReadyToUse", func() (bool, string) {
		u, err := dyn.Resource(snapshotGVR).Namespace(jNS).Get(j.ctx, "snap", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready, _, _ := unstructured.NestedBool(u.Object, "status", "readyToUse")
		return ready, fmt.Sprint(u.Object["status"]) + "\n" + j.srv.Logs("csi-snapshotter")
	})
	sc, group := jClass, "snapshot.storage.k8s.io"
	restored := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "restored", Namespace: jNS},
		Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: &sc,
			DataSource: &v1.TypedLocalObjectReference{APIGroup: &group, Kind: "VolumeSnapshot", Name: "snap"},
			Resources:  v1.VolumeResourceRequirements{Requests: pv.Spec.Capacity}}}
	if _, err := j.cs.CoreV1().PersistentVolumeClaims(jNS).Create(j.ctx, restored, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var volume string
	poll(t, 120*time.Second, "the restored claim to be provisioned and bound", func() (bool, string) {
		p, err := j.cs.CoreV1().PersistentVolumeClaims(jNS).Get(j.ctx, restored.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		volume = p.Spec.VolumeName
		return p.Status.Phase == v1.ClaimBound, string(p.Status.Phase)
	})
	img := j.pv(volume).Spec.CSI.VolumeAttributes["imageName"]
	path := filepath.Join(t.TempDir(), "export")
	if _, err := j.c.RBD(callCtx(t), "export", j.pool+"/"+img, path); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || len(got) < len(data) || !bytes.Equal(got[:len(data)], data) {
		t.Errorf("the image %s restored from the adopted volume's snapshot does not hold its bytes (%v)", img, err)
	}
}

// deleteClaim deletes the claim of a Delete PV and waits until
// external-provisioner has deleted the PV and Ceph CSI the image.
func (j *journey) deleteClaim(claim, pv, image string) {
	t := j.t
	if err := j.cs.CoreV1().PersistentVolumeClaims(jNS).Delete(j.ctx, claim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 90*time.Second, "external-provisioner to delete PV "+pv, func() (bool, string) {
		p, err := j.cs.CoreV1().PersistentVolumes().Get(j.ctx, pv, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, string(p.Status.Phase) + " " + p.Status.Message
	})
	if _, ok := images(t, j.c, j.pool)[image]; ok {
		t.Errorf("%s/%s is still listed after its PV was deleted", j.pool, image)
	}
}

// provision makes a claim of size on the replaced class and waits until
// external-provisioner has provisioned an image Ceph lists.
func (j *journey) provision(class string, size v1.ResourceList) {
	t := j.t
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "new-data", Namespace: jNS},
		Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: &class,
			Resources: v1.VolumeResourceRequirements{Requests: size}}}
	if _, err := j.cs.CoreV1().PersistentVolumeClaims(jNS).Create(j.ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var volume string
	poll(t, 90*time.Second, "the new claim to be provisioned and bound", func() (bool, string) {
		p, err := j.cs.CoreV1().PersistentVolumeClaims(jNS).Get(j.ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		volume = p.Spec.VolumeName
		return p.Status.Phase == v1.ClaimBound, string(p.Status.Phase)
	})
	img := j.pv(volume).Spec.CSI.VolumeAttributes["imageName"]
	if _, ok := images(t, j.c, j.pool)[img]; !ok {
		t.Errorf("Ceph does not list the provisioned image %s/%s", j.pool, img)
	}
}

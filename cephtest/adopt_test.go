package cephtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/apply/cephtool"
	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/volumeid"
)

const dataSize = 8 << 20

// adoptEnv is a pool with images holding known bytes, in-tree PVs of them
// on kube-apiserver 1.30 (the last release with the in-tree plugin, so that
// the undo is possible), and Ceph CSI configured for their cluster.
type adoptEnv struct {
	c      *Cluster
	d      *Drivers
	cs     kubernetes.Interface
	kc     string
	pool   string
	tools  cephtool.Tools
	config ceph.ClusterConfig
	data   []byte
	dir    string
}

func newAdoptEnv(t testing.TB, pool string) *adoptEnv {
	t.Helper()
	c, d := cephEnv(t)
	createPool(t, c, pool)
	var logs bytes.Buffer
	srv, err := testenv.StartRelease(&logs, testenv.V1_30)
	if err != nil {
		t.Fatalf("kube-apiserver: %v\n%s", err, logs.String())
	}
	t.Cleanup(srv.Stop)
	kc, err := srv.WriteKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	e := &adoptEnv{c: c, d: d, cs: srv.Client, kc: kc, pool: pool, tools: cephtool.Tools{Conf: c.Conf}, dir: t.TempDir()}
	e.data = make([]byte, dataSize)
	_, _ = rand.Read(e.data)
	if err := os.WriteFile(filepath.Join(e.dir, "data"), e.data, 0o600); err != nil {
		t.Fatal(err)
	}
	secret := &v1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: "ceph-admin", Namespace: "default"}, Type: "kubernetes.io/rbd",
		Data: map[string][]byte{"key": []byte(c.AdminKey)}}
	sc := inTreeRBDClass("rbd-"+pool, pool, secret.Name)
	ctx := context.Background()
	mustCreate(t, func() error {
		_, err := e.cs.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := e.cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
		return err
	})
	// Ceph CSI's cluster map, as csimigrate plan prints it for these
	// objects.
	pv := inTreeRBDPV("probe", rbdCase{Monitors: []string{MonitorV1}, Pool: pool, Image: "probe"}, "admin", secret.Name)
	tr, _ := configure(t, d, pv, sc, secret)
	_ = tr
	cfg, err := os.ReadFile(CephCSIConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	if e.config, err = ceph.ParseClusterConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "config.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// image imports the test data into a new image with the given features
// ("" for none) and creates an in-tree PV of it from the class.
func (e *adoptEnv) image(t testing.TB, pvName, image, features string) *v1.PersistentVolume {
	t.Helper()
	return e.imageOf(t, pvName, image, features, []string{"import", filepath.Join(e.dir, "data")})
}

// emptyImage is image without the data: an image of dataSize that holds
// nothing yet (rbd create), for the benchmark's hundreds of volumes, which
// the data of each would not fit in the test cluster's 3 GiB OSD.
func (e *adoptEnv) emptyImage(t testing.TB, pvName, image, features string) *v1.PersistentVolume {
	t.Helper()
	return e.imageOf(t, pvName, image, features, []string{"create", "--size", strconv.Itoa(dataSize>>20) + "M"})
}

// imageOf creates the image with rbd's verb and its arguments (the image
// format, features and name follow), and an in-tree PV of it.
func (e *adoptEnv) imageOf(t testing.TB, pvName, image, features string, verb []string) *v1.PersistentVolume {
	t.Helper()
	ctx := callCtx(t)
	args := append(slices.Clone(verb), "--image-format", "2")
	if features != "" {
		args = append(args, "--image-feature", features)
	} else {
		// rbd's default feature set has layering; "none" is what the in-tree
		// provisioner made without imageFeatures.
		args = append(args, "--image-feature", "exclusive-lock")
	}
	if _, err := e.c.RBD(ctx, append(args, e.pool+"/"+image)...); err != nil {
		t.Fatal(err)
	}
	pv := inTreeRBDPV(pvName, rbdCase{Monitors: []string{MonitorV1}, Pool: e.pool, Image: image}, "admin", "ceph-admin")
	pv.Spec.StorageClassName = "rbd-" + e.pool
	created, err := e.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// csimigrate runs the command with the env's kubeconfig, Ceph access and
// cluster map; it returns stdout and fails the test on an exit other than
// want.
// writerLease takes the writer Lease on the env's API server for the rest
// of the test, for the library's writers (the command takes it itself: a
// test that runs both does not hold it).
func (e *adoptEnv) writerLease(t testing.TB) *apply.Lease {
	t.Helper()
	_, l, err := apply.HoldLease(context.Background(), e.cs, apply.DefaultStateNamespace, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Release(context.Background()) })
	return l
}

func (e *adoptEnv) csimigrate(t testing.TB, want int, args ...string) string {
	t.Helper()
	serveDriverConfig(t, e.cs)
	args = append(args, "-kubeconfig", e.kc, "-adopt", "-ceph-conf", e.c.Conf, "-ceph-config", filepath.Join(e.dir, "config.json"))
	// PV names after the flags.
	var flags, names []string
	for i := 0; i < len(args); i++ {
		if strings.HasPrefix(args[i], "pv-") {
			names = append(names, args[i])
			continue
		}
		flags = append(flags, args[i])
	}
	cmd := exec.Command(envBin, append(flags, names...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != want {
		t.Fatalf("csimigrate %q: exit %d, want %d\n%s\n%s", args, code, want, out.String(), errb.String())
	}
	return out.String()
}

func (e *adoptEnv) pv(t testing.TB, name string) *v1.PersistentVolume {
	t.Helper()
	pv, err := e.cs.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pv
}

// journal reads the entry an adopted PV records back from Ceph: "written",
// "absent", or what differs.
func (e *adoptEnv) journal(t testing.TB, j adopt.Journal) string {
	t.Helper()
	ctx := callCtx(t)
	obj, found, err := e.tools.Omap(ctx, j.Pool, j.Namespace, j.Object())
	if err != nil {
		t.Fatal(err)
	}
	dir, _, err := e.tools.Omap(ctx, j.Pool, j.Namespace, j.Directory())
	if err != nil {
		t.Fatal(err)
	}
	if _, has := dir[j.DirectoryKey()]; !found && !has {
		return "absent"
	}
	if why := j.Matches(obj, dir); why != "" {
		return why
	}
	return "written"
}

// export is an image's first dataSize bytes.
func (e *adoptEnv) export(t testing.TB, image string) []byte {
	t.Helper()
	path := filepath.Join(e.dir, "export-"+image)
	if _, err := e.c.RBD(callCtx(t), "export", e.pool+"/"+image, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	if len(b) < dataSize {
		t.Fatalf("image %s holds %d bytes", image, len(b))
	}
	return b[:dataSize]
}

func (e *adoptEnv) secrets() map[string]string {
	return map[string]string{"userID": "admin", "userKey": e.c.AdminKey}
}

func journalOfPV(t testing.TB, pv *v1.PersistentVolume) adopt.Journal {
	t.Helper()
	_, j, ok, err := adopt.Unadopted(pv)
	if err != nil || !ok {
		t.Fatalf("pv/%s is not adopted: %v (annotations %v)", pv.Name, err, pv.Annotations)
	}
	return j
}

// An in-tree RBD PV of a layering image, rewritten with -adopt, becomes one
// of Ceph CSI's own volumes: its volume ID is Ceph CSI's (the pool's ID and
// the image name's UUID), its journal entry reads back, its reclaim policy
// Delete is restored. Ceph CSI's RBD controller then expands it, snapshots
// it, restores the snapshot and clones the volume into images that hold the
// same bytes as the original (read back with rbd export), and deletes it
// with its journal entry. An image without layering is adopted too, and its
// snapshot is refused as the command said; an image whose name does not end
// in a UUID is adopted and keeps Retain, as the command said.
func TestCephRBDAdoptSnapshotClone(t *testing.T) {
	e := newAdoptEnv(t, "kube.adopt")
	ctx := callCtx(t)
	layered := "kubernetes-dynamic-pvc-" + NewUUID()
	bare := "kubernetes-dynamic-pvc-" + NewUUID()
	e.image(t, "pv-layered", layered, "layering")
	e.image(t, "pv-bare", bare, "")
	e.image(t, "pv-static", "static-image", "layering")
	// The plan, reading the images from Ceph, says what the rewrite will
	// make of each (and the driver then does).
	forms := map[string]string{}
	for name, v := range e.forms(t) {
		forms[name] = v.Form + " " + strings.Join(v.Features, ",") + " " + strings.Join(v.FormWhy, "; ")
	}
	for name, want := range map[string][]string{
		"pv-layered": {"native stage,expand,delete,snapshot,clone", "the image as Ceph reports it now"},
		"pv-bare":    {"native stage,expand,delete ", "lacks the layering feature"},
		"pv-static":  {"native stage,expand,delete,snapshot,clone", "does not end in a UUID"},
	} {
		for _, w := range want {
			if !strings.Contains(forms[name], w) {
				t.Errorf("plan -read-ceph for %s: %q, want it to say %q", name, forms[name], w)
			}
		}
	}
	// The dry run lists every Ceph-side write, as commands, and writes
	// nothing.
	dry := e.csimigrate(t, 0, "rewrite", "-apply", "-dry-run", "pv-layered")
	uuid := layered[len(layered)-36:]
	for _, want := range []string{
		"pv/pv-layered: would write to Ceph: rados --conf " + e.c.Conf + " --pool kube.adopt create csi.volume." + uuid,
		"setomapval csi.volume." + uuid + " csi.imagename " + layered,
		"setomapval csi.volumes.default csi.volume.pv-layered " + uuid,
	} {
		if !strings.Contains(dry, want) {
			t.Errorf("the dry run does not list %q:\n%s", want, dry)
		}
	}
	if st := e.journal(t, adopt.Journal{Pool: e.pool, UUID: uuid, VolName: "pv-layered"}); st != "absent" {
		t.Fatalf("the dry run wrote to the journal: %s", st)
	}
	out := e.csimigrate(t, 0, "rewrite", "-apply", "pv-layered", "pv-bare", "pv-static")
	for _, want := range []string{
		"pv/pv-layered: adopted into Ceph CSI's journal as its own volume 0001-",
		"(stage, expand, delete, snapshot, clone)",
		"pv/pv-bare: adopted into Ceph CSI's journal as its own volume",
		"no snapshots or clones: the image lacks the layering feature",
		"pv/pv-static: kept at reclaim policy Retain, not Delete: image kube.adopt/static-image does not end in a UUID",
		"register image kube.adopt/" + layered + " in Ceph CSI's journal",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rewrite -apply -adopt does not say %q:\n%s", want, out)
		}
	}
	poolID, err := e.tools.PoolID(ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	pv := e.pv(t, "pv-layered")
	id, err := volumeid.ParseCephCSIVolumeID(pv.Spec.CSI.VolumeHandle)
	if err != nil || id.Location != poolID || id.ObjectUUID != layered[len(layered)-36:] {
		t.Fatalf("pv-layered's handle %q: %+v %v; want pool %d and the name's UUID", pv.Spec.CSI.VolumeHandle, id, err, poolID)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete || pv.Annotations[rewrite.AnnReclaimPolicy] != "" {
		t.Errorf("pv-layered: reclaim policy %s, annotations %v; want Delete restored", pv.Spec.PersistentVolumeReclaimPolicy, pv.Annotations)
	}
	j := journalOfPV(t, pv)
	if st := e.journal(t, j); st != "written" {
		t.Fatalf("the journal entry of pv-layered: %s", st)
	}
	if st := e.pv(t, "pv-static"); st.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain {
		t.Errorf("pv-static: reclaim policy %s, want Retain", st.Spec.PersistentVolumeReclaimPolicy)
	}

	// Ceph CSI serves it as its own.
	vol := pv.Spec.CSI.VolumeHandle
	if _, err := e.d.RBD.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: vol, CapacityRange: &csi.CapacityRange{RequiredBytes: 2 * dataSize},
		Secrets: e.secrets(), VolumeCapability: mountCap("ext4")}); err != nil {
		t.Fatalf("ControllerExpandVolume: %v", err)
	}
	if got := images(t, e.c, e.pool)[layered]; got != 2*dataSize {
		t.Errorf("after the expansion the image has %d bytes, want %d", got, 2*dataSize)
	}
	params := map[string]string{"clusterID": id.ClusterID, "pool": e.pool, "imageFeatures": "layering"}
	snap, err := e.d.RBD.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: vol, Name: "snap-" + NewUUID(), Parameters: params, Secrets: e.secrets()})
	if err != nil {
		t.Fatalf("CreateSnapshot of the adopted volume: %v", err)
	}
	if !snap.Snapshot.ReadyToUse {
		t.Errorf("the snapshot is not ready: %+v", snap.Snapshot)
	}
	create := func(name string, src *csi.VolumeContentSource) *csi.Volume {
		t.Helper()
		r, err := e.d.RBD.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, CapacityRange: &csi.CapacityRange{RequiredBytes: 2 * dataSize},
			VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4")}, Parameters: params, Secrets: e.secrets(), VolumeContentSource: src})
		if err != nil {
			t.Fatalf("CreateVolume %s: %v", name, err)
		}
		return r.Volume
	}
	restoreAndClone(t, e.d.RBD, e.secrets(), vol, snap.Snapshot.SnapshotId, create,
		func(v *csi.Volume) []byte { return e.export(t, v.VolumeContext["imageName"]) }, e.data)

	// Without layering: adopted, and the snapshot refused as said.
	barePV := e.pv(t, "pv-bare")
	if _, err := e.d.RBD.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: barePV.Spec.CSI.VolumeHandle, Name: "snap-" + NewUUID(),
		Parameters: params, Secrets: e.secrets()}); codeOf(err) != codes.InvalidArgument || !strings.Contains(fmt.Sprint(err), "layering") {
		t.Errorf("CreateSnapshot of the image without layering: %v, want InvalidArgument naming layering", err)
	}
	if _, err := e.d.RBD.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: barePV.Spec.CSI.VolumeHandle,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 2 * dataSize}, Secrets: e.secrets(), VolumeCapability: mountCap("ext4")}); err != nil {
		t.Errorf("ControllerExpandVolume of the image without layering: %v", err)
	}

	// Deleted by Ceph CSI as its own: the image and its journal entry go.
	if _, err := e.d.RBD.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vol, Secrets: e.secrets()}); err != nil {
		t.Fatalf("DeleteVolume of the adopted volume: %v", err)
	}
	if _, ok := images(t, e.c, e.pool)[layered]; ok {
		t.Errorf("image %s is still there after DeleteVolume", layered)
	}
	if st := e.journal(t, j); st != "absent" {
		t.Errorf("the journal entry after DeleteVolume: %s", st)
	}
}

// rewrite -apply -undo -adopt gives back the in-tree PV as it was stored
// before the adoption and removes the journal entry; a second rewrite
// adopts it again with the same volume ID.
func TestCephRBDAdoptUndo(t *testing.T) {
	e := newAdoptEnv(t, "kube.adopt-undo")
	image := "kubernetes-dynamic-pvc-" + NewUUID()
	before := e.image(t, "pv-undo", image, "layering")
	// As the Ceph user docs/prerequisites.md gives, with exactly its caps.
	as := adopterUser(t, e.c)
	e.csimigrate(t, 0, append([]string{"rewrite", "-apply", "pv-undo"}, as...)...)
	adopted := e.pv(t, "pv-undo")
	j := journalOfPV(t, adopted)
	out := e.csimigrate(t, 0, append([]string{"rewrite", "-apply", "-undo", "pv-undo"}, as...)...)
	if !strings.Contains(out, "remove image kube.adopt-undo/"+image+"'s entry from Ceph CSI's journal") {
		t.Errorf("the undo does not say it removes the journal entry:\n%s", out)
	}
	after := e.pv(t, "pv-undo")
	if diff := cmp.Diff(before.Spec, after.Spec); diff != "" {
		t.Errorf("the undone PV's spec (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before.Annotations, after.Annotations); diff != "" {
		t.Errorf("the undone PV's annotations (-before +after):\n%s", diff)
	}
	if st := e.journal(t, j); st != "absent" {
		t.Errorf("the journal entry after the undo: %s", st)
	}
	e.csimigrate(t, 0, append([]string{"rewrite", "-apply", "pv-undo"}, as...)...)
	if again := e.pv(t, "pv-undo"); again.Spec.CSI == nil || again.Spec.CSI.VolumeHandle != adopted.Spec.CSI.VolumeHandle {
		t.Errorf("adopted again as %v, first as %s", again.Spec.CSI, adopted.Spec.CSI.VolumeHandle)
	}
}

// An adoption interrupted after each of its writes (API and Ceph), then
// resumed by another run, ends as the uninterrupted one: the native PV, the
// journal written once, no state left. The same for the undo, which ends
// with no journal entry.
func TestCephRBDAdoptInterrupted(t *testing.T) {
	e := newAdoptEnv(t, "kube.adopt-cut")
	tr, _ := configure(t, e.d, inTreeRBDPV("probe", rbdCase{Monitors: []string{MonitorV1}, Pool: e.pool, Image: "probe"}, "admin", "ceph-admin"))
	lease := e.writerLease(t)
	writer := func(dir apply.Direction, limit int) *apply.Writer {
		w, err := apply.New(e.cs, tr, klogDiscard(), nil, apply.Options{Direction: dir, MaxWrites: limit, Ceph: e.tools, CephConfig: e.config, Lease: lease})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	for k := 1; k <= 12; k++ {
		name := fmt.Sprintf("pv-cut%d", k)
		before := e.image(t, name, "kubernetes-dynamic-pvc-"+NewUUID(), "layering")
		if e.cutAndResume(t, writer, name, k, before) {
			t.Logf("the adoption takes %d writes", k)
			return
		}
	}
	t.Error("the adoption did not finish within 12 writes")
}

// cutAndResume interrupts the adoption of pv/name after k writes and
// resumes it (the journal entry written, Delete restored), then its undo
// likewise (the PV's spec as before, no entry, no state left); it reports
// whether the adoption finished within k writes.
func (e *adoptEnv) cutAndResume(t testing.TB, writer func(dir apply.Direction, limit int) *apply.Writer, name string, k int, before *v1.PersistentVolume) bool {
	t.Helper()
	ctx := context.Background()
	target := []apply.Target{{Name: name}}
	_, err := writer(apply.Rewrite, k).PVs(ctx, target)
	finished := err == nil
	if err != nil && !errors.Is(err, apply.ErrWriteLimit) {
		t.Fatalf("k=%d: the interrupted adoption: %v", k, err)
	}
	if _, err := writer(apply.Rewrite, 0).PVs(ctx, target); err != nil {
		t.Fatalf("k=%d: resuming the adoption: %v", k, err)
	}
	pv := e.pv(t, name)
	j := journalOfPV(t, pv)
	if st := e.journal(t, j); st != "written" || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
		t.Errorf("k=%d: after the resumed adoption the journal is %s, the policy %s", k, st, pv.Spec.PersistentVolumeReclaimPolicy)
	}
	_, err = writer(apply.Undo, k).PVs(ctx, target)
	if err != nil && !errors.Is(err, apply.ErrWriteLimit) {
		t.Fatalf("k=%d: the interrupted undo: %v", k, err)
	}
	if _, err := writer(apply.Undo, 0).PVs(ctx, target); err != nil {
		t.Fatalf("k=%d: resuming the undo: %v", k, err)
	}
	if diff := cmp.Diff(before.Spec, e.pv(t, name).Spec); diff != "" {
		t.Errorf("k=%d: the undone PV (-before +after):\n%s", k, diff)
	}
	if st := e.journal(t, j); st != "absent" {
		t.Errorf("k=%d: the journal after the resumed undo: %s", k, st)
	}
	if cms, err := e.cs.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=csimigrate"}); err != nil || len(cms.Items) > 0 {
		t.Errorf("k=%d: state left: %v %v", k, cms, err)
	}
	return finished
}

// restoreAndClone restores the snapshot snapID and clones the volume vol
// with create, checks that read finds the original data in both, and
// deletes them and the snapshot with the driver's controller ctrl.
func restoreAndClone(t testing.TB, ctrl csi.ControllerClient, secrets map[string]string, vol, snapID string,
	create func(name string, src *csi.VolumeContentSource) *csi.Volume, read func(*csi.Volume) []byte, data []byte) {
	t.Helper()
	ctx := callCtx(t)
	restored := create("restore-"+NewUUID(), &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snapID}}})
	clone := create("clone-"+NewUUID(), &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: vol}}})
	for what, v := range map[string]*csi.Volume{"the restored snapshot": restored, "the clone": clone} {
		if got := read(v); !bytes.Equal(got, data) {
			t.Errorf("%s (%v) does not hold the original bytes", what, v.VolumeContext)
		}
	}
	for _, v := range []string{clone.VolumeId, restored.VolumeId} {
		if _, err := ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v, Secrets: secrets}); err != nil {
			t.Errorf("DeleteVolume %s: %v", v, err)
		}
	}
	if _, err := ctrl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: snapID, Secrets: secrets}); err != nil {
		t.Errorf("DeleteSnapshot: %v", err)
	}
}

func klogDiscard() klog.Logger { return klog.Background().V(100) }

// cephToolsOf reaches the test cluster with Ceph's tools.
func cephToolsOf(c *Cluster) cephtool.Tools { return cephtool.Tools{Conf: c.Conf} }

// CSI PVs that already carry a migration handle (one an earlier rewrite
// wrote, one as Kubernetes' own migration stored it, without csimigrate's
// annotations) are adopted by rewrite -apply -adopt -adopt-csi: Ceph CSI's
// own volume ID, the journal entry written, their reclaim policy kept, and
// a snapshot of them succeeds; the undo gives back exactly the PV with the
// migration handle and leaves no journal entry.
func TestCephRBDAdoptMigrationHandle(t *testing.T) {
	e := newAdoptEnv(t, "kube.adopt-mig")
	ctx := callCtx(t)
	// One rewritten without -adopt: a CSI PV with csimigrate's migration
	// handle.
	e.image(t, "pv-rewritten", "kubernetes-dynamic-pvc-"+NewUUID(), "layering")
	serveDriverConfig(t, e.cs)
	if out, err := exec.Command(envBin, "rewrite", "-apply", "-kubeconfig", e.kc, "pv-rewritten").CombinedOutput(); err != nil {
		t.Fatalf("rewrite -apply: %v\n%s", err, out)
	}
	// One as Kubernetes' migration stored it: the translation, without
	// csimigrate's annotations.
	in := e.image(t, "pv-k8s", "kubernetes-dynamic-pvc-"+NewUUID(), "layering")
	in.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"}
	tr, _ := configure(t, e.d, in)
	k8s, err := tr.TranslateInTreePVToCSI(klogDiscard(), in)
	if err != nil {
		t.Fatal(err)
	}
	k8s = k8s.DeepCopy()
	k8s.ResourceVersion, k8s.UID, k8s.Annotations = "", "", map[string]string{"pv.kubernetes.io/provisioned-by": "rbd.csi.ceph.com"}
	// Gone (its pv-protection finalizer removed: no controller runs here).
	if _, err := e.cs.CoreV1().PersistentVolumes().Patch(ctx, "pv-k8s", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.cs.CoreV1().PersistentVolumes().Delete(ctx, "pv-k8s", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "pv-k8s to go", func() (bool, string) {
		_, err := e.cs.CoreV1().PersistentVolumes().Get(ctx, "pv-k8s", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if _, err := e.cs.CoreV1().PersistentVolumes().Create(ctx, k8s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := map[string]*v1.PersistentVolume{"pv-rewritten": e.pv(t, "pv-rewritten"), "pv-k8s": e.pv(t, "pv-k8s")}
	for n, pv := range before {
		if !volumeid.IsRBDHandle(pv.Spec.CSI.VolumeHandle) {
			t.Fatalf("%s has no migration handle: %s", n, pv.Spec.CSI.VolumeHandle)
		}
	}
	out := e.csimigrate(t, 0, "rewrite", "-apply", "-adopt-csi", "pv-rewritten", "pv-k8s")
	for n, pv := range before {
		now := e.pv(t, n)
		if _, err := volumeid.ParseCephCSIVolumeID(now.Spec.CSI.VolumeHandle); err != nil {
			t.Fatalf("%s after the adoption: %v\n%s", n, err, out)
		}
		if now.Spec.PersistentVolumeReclaimPolicy != pv.Spec.PersistentVolumeReclaimPolicy {
			t.Errorf("%s: reclaim policy %s, was %s", n, now.Spec.PersistentVolumeReclaimPolicy, pv.Spec.PersistentVolumeReclaimPolicy)
		}
		j := journalOfPV(t, now)
		if st := e.journal(t, j); st != "written" {
			t.Errorf("%s: the journal entry %s", n, st)
		}
		snap, err := e.d.RBD.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: now.Spec.CSI.VolumeHandle, Name: "snap-" + NewUUID(),
			Parameters: map[string]string{"clusterID": now.Spec.CSI.VolumeAttributes["clusterID"], "pool": e.pool}, Secrets: e.secrets()})
		if err != nil {
			t.Errorf("%s: CreateSnapshot of the adopted volume: %v", n, err)
		} else if _, err := e.d.RBD.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: snap.Snapshot.SnapshotId, Secrets: e.secrets()}); err != nil {
			t.Errorf("%s: DeleteSnapshot: %v", n, err)
		}
	}
	adopted := map[string]adopt.Journal{"pv-rewritten": journalOfPV(t, e.pv(t, "pv-rewritten")), "pv-k8s": journalOfPV(t, e.pv(t, "pv-k8s"))}
	e.csimigrate(t, 0, "rewrite", "-apply", "-undo", "-adopt-csi", "pv-rewritten", "pv-k8s")
	for n, pv := range before {
		now := e.pv(t, n)
		if diff := cmp.Diff(pv.Spec, now.Spec); diff != "" {
			t.Errorf("%s after the undo (-before +after):\n%s", n, diff)
		}
		if diff := cmp.Diff(pv.Annotations, now.Annotations); diff != "" {
			t.Errorf("%s's annotations after the undo (-before +after):\n%s", n, diff)
		}
		if st := e.journal(t, adopted[n]); st != "absent" {
			t.Errorf("%s: the journal entry after the undo: %s", n, st)
		}
	}
}

// BenchmarkCephRBDAdopt measures what the adoption adds per volume: the
// rewrite of CSIMIGRATE_BENCH_ADOPT (default 20) in-tree RBD PVs with
// -adopt, against the rewrite of as many without it, as rewrite -apply
// runs them (-concurrency 8, its default; CSIMIGRATE_BENCH_ADOPT_CONCURRENCY
// sets another), on the test cluster (one OSD, Ceph's tools as separate
// processes: about a dozen tool calls a volume, each a Ceph client start
// and round trips). It reports the wall-clock time the adoption adds per
// volume. Run with -benchtime 1x.
func BenchmarkCephRBDAdopt(b *testing.B) {
	n := 20
	if v, err := strconv.Atoi(os.Getenv("CSIMIGRATE_BENCH_ADOPT")); err == nil && v > 0 {
		n = v
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		var plain, adopted time.Duration
		e := newAdoptEnv(b, fmt.Sprintf("kube.bench%d", i))
		lease := e.writerLease(b)
		tr, _ := configure(b, e.d, inTreeRBDPV("probe", rbdCase{Monitors: []string{MonitorV1}, Pool: e.pool, Image: "probe"}, "admin", "ceph-admin"))
		counted := countTools(b, e.tools)
		for _, withCeph := range []bool{false, true} {
			var targets []apply.Target
			for k := range n {
				name := fmt.Sprintf("pv-%t-%d", withCeph, k)
				e.emptyImage(b, name, "kubernetes-dynamic-pvc-"+NewUUID(), "layering")
				targets = append(targets, apply.Target{Name: name})
			}
			o := apply.Options{Lease: lease, Concurrency: adoptConcurrency()}
			if withCeph {
				o.Ceph, o.CephConfig = counted.tools, e.config
			}
			w, err := apply.New(e.cs, tr, klogDiscard(), nil, o)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := time.Now()
			if _, err := w.PVs(context.Background(), targets); err != nil {
				b.Fatal(err)
			}
			el := time.Since(start)
			b.StopTimer()
			if withCeph {
				adopted = el
			} else {
				plain = el
			}
		}
		per := (adopted - plain) / time.Duration(n)
		b.Logf("%d PVs rewritten in %s; with adoption in %s: %s more a volume", n, plain.Round(time.Millisecond), adopted.Round(time.Millisecond), per.Round(time.Millisecond))
		b.ReportMetric(per.Seconds(), "s/adopted-volume")
		reportCalls(b, counted, n, e.tools, e.pool)
	}
}

// adoptDraw is one generated in-tree RBD volume for the adoption oracle.
type adoptDraw struct {
	Image    string
	Features string // rbd create --image-feature, "" for none
	Shared   bool   // a second PV names the same image
}

func drawAdopt(rt *rapid.T) adoptDraw {
	name := rapid.SampledFrom([]string{"kubernetes-dynamic-pvc-" + NewUUID(), "static-" + rapid.StringMatching(`[a-z0-9]{1,8}`).Draw(rt, "suffix"),
		"img-" + NewUUID()}).Draw(rt, "image")
	return adoptDraw{Image: name, Features: rapid.SampledFrom([]string{"layering", "layering,exclusive-lock", "exclusive-lock", ""}).Draw(rt, "features"),
		Shared: rapid.IntRange(0, 4).Draw(rt, "shared") == 0}
}

// The adoption oracle: generated images (names with and without a UUID
// suffix, with and without layering, some named by a second PV). For each,
// what plan -read-ceph says (form, features, Retain) is compared with what
// happens: the rewrite with -adopt, then Ceph CSI's RBD controller asked to
// expand and snapshot the volume. A feature the plan promises that the
// driver refuses, or one it denies that the driver grants, is a false
// verdict. CSIMIGRATE_ADOPT_DRAWS sets the number of draws (default 6).
func TestCephRBDAdoptOracle(t *testing.T) {
	e := newAdoptEnv(t, "kube.adopt-oracle")
	ctx := callCtx(t)
	draws := 6
	if s := os.Getenv("CSIMIGRATE_ADOPT_DRAWS"); s != "" {
		fmt.Sscan(s, &draws)
	}
	base := seed(t)
	var falseVerdicts, natives, handles int
	for round := range draws {
		var dr adoptDraw
		rapid.Custom(func(rt *rapid.T) int { dr = drawAdopt(rt); return 0 }).Example(base + round)
		if strings.HasPrefix(dr.Image, "static-") {
			dr.Image += fmt.Sprintf("-r%d", round) // draws repeat short names
		}
		name := fmt.Sprintf("pv-oracle-%d", round)
		pv := e.image(t, name, dr.Image, dr.Features)
		names := []string{name}
		if dr.Shared {
			twin := inTreeRBDPV(name+"-twin", rbdCase{Monitors: []string{MonitorV1}, Pool: e.pool, Image: dr.Image}, "admin", "ceph-admin")
			twin.Spec.StorageClassName = pv.Spec.StorageClassName
			if _, err := e.cs.CoreV1().PersistentVolumes().Create(ctx, twin, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		planned := e.forms(t)[name]
		form, features, why := planned.Form, planned.Features, planned.FormWhy
		e.csimigrate(t, 0, append([]string{"rewrite", "-apply"}, names...)...)
		got := e.pv(t, name)
		native := strings.HasPrefix(got.Spec.CSI.VolumeHandle, "0001-")
		wantNative := form == string(adopt.FormNative)
		if native != wantNative {
			falseVerdicts++
			t.Errorf("draw %d %+v: the plan says %s (%q), the rewrite made handle %s", round, dr, form, why, got.Spec.CSI.VolumeHandle)
			continue
		}
		keptRetain := got.Spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimRetain
		saysRetain := strings.Contains(strings.Join(why, ";"), "keeps reclaim policy Retain")
		if native && keptRetain != saysRetain {
			falseVerdicts++
			t.Errorf("draw %d %+v: the PV ends %s, the plan says %q", round, dr, got.Spec.PersistentVolumeReclaimPolicy, why)
		}
		if !native {
			handles++
			if _, err := e.d.RBD.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: got.Spec.CSI.VolumeHandle, Name: "snap-" + NewUUID(),
				Parameters: map[string]string{"clusterID": got.Spec.CSI.VolumeAttributes["clusterID"], "pool": e.pool}, Secrets: e.secrets()}); err == nil {
				falseVerdicts++
				t.Errorf("draw %d %+v: kept its migration handle, yet Ceph CSI snapshotted it", round, dr)
			}
			continue
		}
		natives++
		if _, err := e.d.RBD.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: got.Spec.CSI.VolumeHandle,
			CapacityRange: &csi.CapacityRange{RequiredBytes: 2 * dataSize}, Secrets: e.secrets(), VolumeCapability: mountCap("ext4")}); err != nil {
			falseVerdicts++
			t.Errorf("draw %d %+v: expansion of the adopted volume: %v", round, dr, err)
		}
		snap, err := e.d.RBD.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: got.Spec.CSI.VolumeHandle, Name: "snap-" + NewUUID(),
			Parameters: map[string]string{"clusterID": got.Spec.CSI.VolumeAttributes["clusterID"], "pool": e.pool}, Secrets: e.secrets()})
		promised := slices.Contains(features, string(adopt.FeatureSnapshot))
		if (err == nil) != promised {
			falseVerdicts++
			t.Errorf("draw %d %+v: the plan promises snapshots %t, Ceph CSI's CreateSnapshot: %v", round, dr, promised, err)
		}
		if err == nil {
			if _, err := e.d.RBD.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: snap.Snapshot.SnapshotId, Secrets: e.secrets()}); err != nil {
				t.Errorf("draw %d: DeleteSnapshot: %v", round, err)
			}
		}
	}
	t.Logf("%d draws (seed %d): %d adopted, %d kept their migration handle; false verdicts: %d", draws, base, natives, handles, falseVerdicts)
}

// plannedForm is what plan -o json says of a Ceph volume's form.
type plannedForm struct {
	Name     string   `json:"name"`
	Form     string   `json:"form"`
	Features []string `json:"features"`
	FormWhy  []string `json:"formWhy"`
	// AdoptClusterID is the clusterID the adoption's volume ID names.
	AdoptClusterID string `json:"adoptClusterID"`
}

// forms runs plan -live -read-ceph on the env's cluster (it exits 1 when
// something blocks; that is a plan too) and returns each volume's form by
// PV name.
func (e *adoptEnv) forms(t testing.TB) map[string]plannedForm {
	t.Helper()
	out, err := exec.Command(envBin, "plan", "-live", "-kubeconfig", e.kc, "-o", "json", "-read-ceph", "-ceph-conf", e.c.Conf).Output()
	if ee := (*exec.ExitError)(nil); err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	var plan struct {
		Volumes []plannedForm `json:"volumes"`
	}
	if err := json.Unmarshal(out, &plan); err != nil {
		t.Fatalf("plan -o json: %v\n%s", err, out)
	}
	m := map[string]plannedForm{}
	for _, v := range plan.Volumes {
		m[v.Name] = v
	}
	return m
}

// adoptConcurrency is how many PVs the adoption benchmarks rewrite at once:
// CSIMIGRATE_BENCH_ADOPT_CONCURRENCY, else rewrite -apply's default (8).
func adoptConcurrency() int {
	if v, err := strconv.Atoi(os.Getenv("CSIMIGRATE_BENCH_ADOPT_CONCURRENCY")); err == nil && v > 0 {
		return v
	}
	return 8
}

// toolCounter runs Ceph's tools as the command does (with a Cache of a
// minute), through a wrapper that records each call, so that a benchmark
// can say how many tool calls, and how many starts of the ceph tool (a
// Python program, the slowest), a volume costs.
type toolCounter struct {
	log   string
	tools cephtool.Tools
}

func countTools(b *testing.B, tools cephtool.Tools) *toolCounter {
	b.Helper()
	log := filepath.Join(b.TempDir(), "calls")
	tools.Prefix = append([]string{"sh", "-c", `echo "$1" >> "$0"; exec "$@"`, log}, tools.Prefix...)
	tools.Cache = cephtool.NewCache(time.Minute)
	return &toolCounter{log: log, tools: tools}
}

// calls are the tool calls made so far: all of them, and the ceph tool's.
func (c *toolCounter) calls(b *testing.B) (all, ceph int) {
	b.Helper()
	out, err := os.ReadFile(c.log)
	if err != nil && !os.IsNotExist(err) {
		b.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l == "" {
			continue
		}
		all++
		if l == "ceph" {
			ceph++
		}
	}
	return all, ceph
}

// callFloor is the wall-clock time of one rados call and one ceph call on
// the test cluster, one at a time (the mean of five each): Ceph's own time
// per call, the floor of what a volume's calls can cost.
func callFloor(b *testing.B, tools cephtool.Tools, pool string) (rados, cephCall time.Duration) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	for range 5 {
		if _, _, err := tools.Omap(ctx, pool, "", "csi.volumes.default"); err != nil {
			b.Fatal(err)
		}
	}
	rados = time.Since(start) / 5
	start = time.Now()
	for range 5 {
		if _, err := tools.PoolID(ctx, pool); err != nil {
			b.Fatal(err)
		}
	}
	return rados, time.Since(start) / 5
}

// reportCalls reports the tool calls a volume made and the floor per call.
func reportCalls(b *testing.B, c *toolCounter, n int, plain cephtool.Tools, pool string) {
	b.Helper()
	all, ceph := c.calls(b)
	rados, cephCall := callFloor(b, plain, pool)
	b.Logf("%d tool calls for %d volumes (%.1f a volume, %.2f of the ceph tool); one rados call takes %s, one ceph call %s",
		all, n, float64(all)/float64(n), float64(ceph)/float64(n), rados.Round(time.Millisecond), cephCall.Round(time.Millisecond))
	b.ReportMetric(float64(all)/float64(n), "tool-calls/volume")
	b.ReportMetric(float64(ceph)/float64(n), "ceph-calls/volume")
	b.ReportMetric(rados.Seconds(), "s/rados-call")
	b.ReportMetric(cephCall.Seconds(), "s/ceph-call")
}

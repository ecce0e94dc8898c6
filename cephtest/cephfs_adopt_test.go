package cephtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/apply/cephtool"
	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/translate"
	"github.com/csimigrate/csimigrate/volumeid"
)

// cephfsAdoptEnv is CephFS directories holding known bytes, in-tree PVs of
// them on kube-apiserver 1.30, the Secrets migration needs (the in-tree
// one, the derived one a static volume stages with, and Ceph CSI's CephFS
// admin secret), and Ceph CSI configured as csimigrate plan says.
type cephfsAdoptEnv struct {
	adoptEnv
	mnt  string
	pvs  []runtime.Object
	objs []runtime.Object
}

const (
	cephfsGroup     = "kubernetes"
	cephfsSecretNS  = "ceph-csi"
	cephfsSecret    = "csi-cephfs-secret"
	cephfsInTreeSec = "cephfs-admin"
)

func newCephFSAdoptEnv(t testing.TB) *cephfsAdoptEnv {
	t.Helper()
	c, d := cephEnv(t)
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
	e := &cephfsAdoptEnv{adoptEnv: adoptEnv{c: c, d: d, cs: srv.Client, kc: kc, tools: cephtool.Tools{Conf: c.Conf}, dir: t.TempDir()}, mnt: adminMount(t, c)}
	e.data = make([]byte, 1<<20)
	_, _ = rand.Read(e.data)
	secretType := metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}
	inTree := &v1.Secret{TypeMeta: secretType, ObjectMeta: metav1.ObjectMeta{Name: cephfsInTreeSec, Namespace: "apps"}, Data: map[string][]byte{"key": []byte(c.AdminKey)}}
	derived, err := secrets.CephFSCSISecret(inTree, "admin")
	if err != nil {
		t.Fatal(err)
	}
	admin := &v1.Secret{TypeMeta: secretType, ObjectMeta: metav1.ObjectMeta{Name: cephfsSecret, Namespace: cephfsSecretNS},
		Data: map[string][]byte{"adminID": []byte("admin"), "adminKey": []byte(c.AdminKey)}}
	ctx := context.Background()
	for _, ns := range []string{"apps", cephfsSecretNS} {
		mustCreate(t, func() error {
			// ceph-csi is there already: the test server runs Ceph CSI's
			// manifests' config map in it.
			_, err := e.cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	}
	for _, s := range []*v1.Secret{inTree, derived, admin} {
		mustCreate(t, func() error {
			_, err := e.cs.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{})
			return err
		})
		e.objs = append(e.objs, s)
	}
	return e
}

// dir makes a directory of the file system holding the env's data in
// file "data"; layout gives it an explicit layout (a pool namespace), as
// ceph_volume_client did for the volumes it made (a directory made by hand
// has none).
func (e *cephfsAdoptEnv) dirWithData(t testing.TB, path string, layout bool) {
	t.Helper()
	dir := filepath.Join(e.mnt, path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if layout {
		if err := syscall.Setxattr(dir, "ceph.dir.layout.pool_namespace", []byte("fsvolumens_"+filepath.Base(path)), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "data"), e.data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// inTreePV creates an in-tree CephFS PV of path with reclaim policy
// Delete, as the ceph.com/cephfs provisioner made them (it deleted them
// with their claims).
func (e *cephfsAdoptEnv) inTreePV(t testing.TB, name, path string) {
	t.Helper()
	e.inTreePVBy(t, name, path, plugin.CephFSExternalProvisioner)
}

// inTreePVBy is inTreePV with another provisioned-by ("" for none: a PV
// made by hand).
func (e *cephfsAdoptEnv) inTreePVBy(t testing.TB, name, path, by string) {
	t.Helper()
	pv := inTreeCephFSPV(name, path, "admin", cephfsInTreeSec)
	if by != "" {
		pv.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": by}
	}
	pv.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimDelete
	if _, err := e.cs.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.pvs = append(e.pvs, pv)
}

// configure makes Ceph CSI's cluster map the one csimigrate plan prints
// for the env's PVs (with the entry of their subvolume group) and keeps it
// for -ceph-config; it returns a translator that knows the same clusters.
func (e *cephfsAdoptEnv) configure(t testing.TB) *translate.Translator {
	t.Helper()
	tr, _ := configure(t, e.d, append(slicesClone(e.pvs), e.objs...)...)
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
	return tr
}

func slicesClone(s []runtime.Object) []runtime.Object { return append([]runtime.Object(nil), s...) }

func (e *cephfsAdoptEnv) adminSecrets() map[string]string {
	return map[string]string{"adminID": "admin", "adminKey": e.c.AdminKey}
}

// subvolumeQuota is the subvolume's bytes_quota, as Ceph's volumes module
// reports it.
func (e *cephfsAdoptEnv) subvolumeQuota(t testing.TB, name string) string {
	t.Helper()
	out, err := e.c.Ceph(callCtx(t), "fs", "subvolume", "info", FSName, name, "--group_name", cephfsGroup, "-f", "json")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(out, `"bytes_quota": `)
	q, _, _ := strings.Cut(rest, ",")
	return q
}

// readData is the file "data" of a volume's directory, through the admin
// mount.
func (e *cephfsAdoptEnv) readData(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.mnt, path, "data"))
	if err != nil {
		t.Fatalf("reading %s/data: %v", path, err)
	}
	return b
}

// An in-tree CephFS PV whose path is a legacy subvolume
// (/volumes/<group>/<name>, with the explicit layout ceph_volume_client
// gave its volumes), rewritten with -adopt and -cephfs-secret, becomes one
// of Ceph CSI's own CephFS volumes: its volume ID is Ceph CSI's (the file
// system's ID and the name's UUID), its journal entry (in the metadata
// pool's namespace csi) reads back, its reclaim policy Delete is restored.
// Ceph CSI's CephFS driver then stages it with the admin secret the PV
// names (the file reads back), expands it, snapshots it, restores the
// snapshot and clones the volume into subvolumes that hold the same bytes,
// and deletes it with its journal entry. A directory made by hand (no
// layout), a path outside /volumes, and a name without a UUID are treated
// as the plan said: static, static, native kept at Retain.
func TestCephFSAdoptSnapshotClone(t *testing.T) {
	e := newCephFSAdoptEnv(t)
	ctx := callCtx(t)
	u := NewUUID()
	name := "kubernetes-dynamic-pvc-" + u
	path := "/volumes/" + cephfsGroup + "/" + name
	byHand := "/volumes/" + cephfsGroup + "/byhand-" + NewUUID()
	e.dirWithData(t, path, true)
	e.dirWithData(t, byHand, false)
	e.dirWithData(t, "/volumes/"+cephfsGroup+"/reports", true)
	e.dirWithData(t, "/shared/data", true)
	e.inTreePV(t, "pv-subvol", path)
	e.inTreePV(t, "pv-byhand", byHand)
	e.inTreePV(t, "pv-reports", "/volumes/"+cephfsGroup+"/reports")
	e.inTreePV(t, "pv-shared", "/shared/data")
	nobody := "/volumes/" + cephfsGroup + "/kubernetes-dynamic-pvc-" + NewUUID()
	e.dirWithData(t, nobody, true)
	e.inTreePVBy(t, "pv-nobody", nobody, "")
	e.configure(t)
	base := ceph.EntryFor([]string{MonitorV1})
	groupEntry := ceph.CephFSGroupEntry(base, cephfsGroup)
	if id, ok := e.config.CephFSGroupClusterID(base.ClusterID, cephfsGroup); !ok || id != groupEntry.ClusterID {
		t.Fatalf("the plan's Ceph CSI config has no entry for group %s (got %q, %v): %s", cephfsGroup, id, ok, mustRead(t, CephCSIConfigFile))
	}

	// The plan, reading Ceph, says what the rewrite will make of each.
	forms := map[string]string{}
	for n, v := range e.forms(t) {
		forms[n] = v.Form + " " + strings.Join(v.Features, ",") + " " + strings.Join(v.FormWhy, "; ")
	}
	for n, want := range map[string][]string{
		"pv-subvol":  {"native stage,expand,delete,snapshot,clone", "admin Secret Ceph CSI's CephFS StorageClass names"},
		"pv-byhand":  {"static stage ", "does not serve", "error in getxattr", "setfattr -n ceph.dir.layout.pool"},
		"pv-reports": {"native stage,expand,delete,snapshot,clone", "does not end in a UUID"},
		"pv-shared":  {"static stage ", "is not /volumes/<group>/<name>"},
	} {
		for _, w := range want {
			if !strings.Contains(forms[n], w) {
				t.Errorf("plan -read-ceph for %s: %q, want it to say %q", n, forms[n], w)
			}
		}
	}

	secretArg := "-cephfs-secret=" + cephfsSecretNS + "/" + cephfsSecret
	out := e.csimigrate(t, 0, "rewrite", "-apply", secretArg, "pv-subvol", "pv-byhand", "pv-reports", "pv-shared", "pv-nobody")
	for _, want := range []string{
		"pv/pv-subvol: adopted into Ceph CSI's journal as its own volume 0001-",
		"register subvolume " + name + " (journal in cephfs." + FSName + ".meta, namespace csi)",
		"pv/pv-byhand: stays a static volume",
		"pv/pv-reports: kept at reclaim policy Retain, not Delete: subvolume kubernetes/reports does not end in a UUID",
		"pv/pv-shared: stays a static volume",
		"pv/pv-nobody: kept at reclaim policy Retain, not Delete: no provisioner ever deleted this volume",
		"pv/pv-shared: kept at reclaim policy Retain, not Delete: Ceph CSI never deletes static CephFS volumes",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rewrite -apply -adopt does not say %q:\n%s", want, out)
		}
	}
	pv := e.pv(t, "pv-subvol")
	id, err := volumeid.ParseCephCSIVolumeID(pv.Spec.CSI.VolumeHandle)
	if err != nil || id.ClusterID != groupEntry.ClusterID || id.Location != 1 || id.ObjectUUID != u {
		t.Fatalf("pv-subvol's handle %q: %+v %v; want cluster %s, file system 1 and the name's UUID", pv.Spec.CSI.VolumeHandle, id, err, groupEntry.ClusterID)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete || pv.Annotations[rewrite.AnnReclaimPolicy] != "" {
		t.Errorf("pv-subvol: reclaim policy %s, annotations %v; want Delete restored", pv.Spec.PersistentVolumeReclaimPolicy, pv.Annotations)
	}
	if ref := pv.Spec.CSI.NodeStageSecretRef; ref == nil || ref.Name != cephfsSecret || ref.Namespace != cephfsSecretNS {
		t.Errorf("pv-subvol's nodeStageSecretRef %v, want %s/%s", ref, cephfsSecretNS, cephfsSecret)
	}
	j := journalOfPV(t, pv)
	if st := e.journal(t, j); st != "written" || j.Namespace != adopt.JournalNamespaceCephFS || j.Pool != "cephfs."+FSName+".meta" {
		t.Fatalf("the journal entry of pv-subvol (%+v): %s", j, st)
	}
	for n, want := range map[string]string{"pv-byhand": "true", "pv-shared": "true", "pv-reports": ""} {
		got := e.pv(t, n)
		if got.Spec.CSI == nil || got.Spec.CSI.VolumeAttributes["staticVolume"] != want {
			t.Errorf("%s: %+v, want a CSI PV with staticVolume %q", n, got.Spec.CSI, want)
		}
	}
	for _, n := range []string{"pv-reports", "pv-nobody", "pv-shared", "pv-byhand"} {
		if got := e.pv(t, n); got.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain {
			t.Errorf("%s: reclaim policy %s, want Retain", n, got.Spec.PersistentVolumeReclaimPolicy)
		}
	}
	if got := e.pv(t, "pv-nobody"); !strings.HasPrefix(got.Spec.CSI.VolumeHandle, "0001-") {
		t.Errorf("pv-nobody: handle %s, want it adopted (kept at Retain)", got.Spec.CSI.VolumeHandle)
	}

	// Ceph CSI's node server stages it as its own, with what the PV says.
	vol := pv.Spec.CSI.VolumeHandle
	staging := filepath.Join(t.TempDir(), "staging")
	if err := os.Mkdir(staging, 0o750); err != nil {
		t.Fatal(err)
	}
	vc := maps.Clone(pv.Spec.CSI.VolumeAttributes)
	vc["mounter"] = "fuse" // no kernel client here
	stageSecret, err := e.cs.CoreV1().Secrets(cephfsSecretNS).Get(ctx, cephfsSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.d.CephFS.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: vol, StagingTargetPath: staging, VolumeCapability: rwx(),
		VolumeContext: vc, Secrets: secrets.SecretStringData(stageSecret)}); err != nil {
		t.Fatalf("NodeStageVolume of the adopted volume: %v\n%s", err, e.d.Log("cephcsi-cephfs"))
	}
	if got, err := os.ReadFile(filepath.Join(staging, "data")); err != nil || !bytes.Equal(got, e.data) {
		t.Errorf("the staged volume's data: %d bytes, %v; want the original %d", len(got), err, len(e.data))
	}
	if _, err := e.d.CephFS.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: vol, StagingTargetPath: staging}); err != nil {
		t.Errorf("NodeUnstageVolume: %v", err)
	}

	// The controller: expansion, snapshot, restore, clone.
	if _, err := e.d.CephFSController.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: vol,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 30}, Secrets: e.adminSecrets()}); err != nil {
		t.Fatalf("ControllerExpandVolume: %v", err)
	}
	if q := e.subvolumeQuota(t, name); q != "2147483648" {
		t.Errorf("after the expansion the subvolume's quota is %s, want 2147483648", q)
	}
	params := map[string]string{"clusterID": id.ClusterID, "fsName": FSName}
	snap, err := e.d.CephFSController.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: vol, Name: "snap-" + NewUUID(), Parameters: params, Secrets: e.adminSecrets()})
	if err != nil {
		t.Fatalf("CreateSnapshot of the adopted volume: %v", err)
	}
	if !snap.Snapshot.ReadyToUse {
		t.Errorf("the snapshot is not ready: %+v", snap.Snapshot)
	}
	// create retries while Ceph's clone runs (Ceph CSI answers Aborted
	// until it is done, and the provisioner retries likewise).
	create := func(reqName string, src *csi.VolumeContentSource) *csi.Volume {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			r, err := e.d.CephFSController.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: reqName, CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 30},
				VolumeCapabilities: []*csi.VolumeCapability{rwx()}, Parameters: params, Secrets: e.adminSecrets(), VolumeContentSource: src})
			if err == nil {
				return r.Volume
			}
			if codeOf(err) != codes.Aborted || time.Now().After(deadline) {
				t.Fatalf("CreateVolume %s: %v", reqName, err)
			}
			time.Sleep(time.Second)
		}
	}
	restoreAndClone(t, e.d.CephFSController, e.adminSecrets(), vol, snap.Snapshot.SnapshotId, create,
		func(v *csi.Volume) []byte { return e.readData(t, v.VolumeContext["subvolumePath"]) }, e.data)

	// Deleted by Ceph CSI as its own: the subvolume and its journal entry
	// go; the other volumes' directories stay.
	if _, err := e.d.CephFSController.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vol, Secrets: e.adminSecrets()}); err != nil {
		t.Fatalf("DeleteVolume of the adopted volume: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.mnt, path)); !os.IsNotExist(err) {
		t.Errorf("%s after DeleteVolume: %v, want it gone", path, err)
	}
	if st := e.journal(t, j); st != "absent" {
		t.Errorf("the journal entry after DeleteVolume: %s", st)
	}
	for _, p := range []string{"/volumes/" + cephfsGroup + "/reports", byHand, "/shared/data"} {
		if got := e.readData(t, p); !bytes.Equal(got, e.data) {
			t.Errorf("%s changed", p)
		}
	}
}

// rewrite -apply -undo -adopt gives back the in-tree CephFS PV as it was
// stored before the adoption (path, secret, reclaim policy) and removes the
// journal entry, leaving the directory and its data; a second rewrite
// adopts it again with the same volume ID.
func TestCephFSAdoptUndo(t *testing.T) {
	e := newCephFSAdoptEnv(t)
	u := NewUUID()
	path := "/volumes/" + cephfsGroup + "/kubernetes-dynamic-pvc-" + u
	e.dirWithData(t, path, true)
	e.inTreePV(t, "pv-undo", path)
	e.configure(t)
	before := e.pv(t, "pv-undo")
	secretArg := "-cephfs-secret=" + cephfsSecretNS + "/" + cephfsSecret
	e.csimigrate(t, 0, "rewrite", "-apply", secretArg, "pv-undo")
	adopted := e.pv(t, "pv-undo")
	j := journalOfPV(t, adopted)
	e.csimigrate(t, 0, "rewrite", "-apply", "-undo", "pv-undo")
	after := e.pv(t, "pv-undo")
	if after.Spec.CephFS == nil || after.Spec.CephFS.Path != path || after.Spec.CephFS.SecretRef == nil || after.Spec.CephFS.SecretRef.Name != cephfsInTreeSec ||
		after.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
		t.Errorf("after the undo: %+v, want the in-tree PV %+v", after.Spec, before.Spec)
	}
	if diff := cmp.Diff(before.Annotations, after.Annotations); diff != "" {
		t.Errorf("the undone PV's annotations (-before +after):\n%s", diff)
	}
	if st := e.journal(t, j); st != "absent" {
		t.Errorf("the journal entry after the undo: %s", st)
	}
	if got := e.readData(t, path); !bytes.Equal(got, e.data) {
		t.Errorf("%s changed", path)
	}
	e.csimigrate(t, 0, "rewrite", "-apply", secretArg, "pv-undo")
	if again := e.pv(t, "pv-undo"); again.Spec.CSI == nil || again.Spec.CSI.VolumeHandle != adopted.Spec.CSI.VolumeHandle {
		t.Errorf("adopted again: %+v, want handle %s", again.Spec.CSI, adopted.Spec.CSI.VolumeHandle)
	}
}

func mustRead(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An adoption of a CephFS subvolume interrupted after each of its writes
// (API and Ceph) is finished by a second run, and its undo, interrupted
// likewise, gives back the in-tree PV with no journal entry and no state
// left; the directory's data is untouched throughout.
func TestCephFSAdoptInterrupted(t *testing.T) {
	e := newCephFSAdoptEnv(t)
	var paths []string
	for k := 1; k <= 12; k++ {
		p := "/volumes/" + cephfsGroup + "/kubernetes-dynamic-pvc-" + NewUUID()
		e.dirWithData(t, p, true)
		paths = append(paths, p)
		e.inTreePV(t, fmt.Sprintf("pv-cut%d", k), p)
	}
	tr := e.configure(t)
	secret := &v1.SecretReference{Namespace: cephfsSecretNS, Name: cephfsSecret}
	lease := e.writerLease(t)
	writer := func(dir apply.Direction, limit int) *apply.Writer {
		w, err := apply.New(e.cs, tr, klogDiscard(), nil, apply.Options{Direction: dir, MaxWrites: limit, Ceph: e.tools, CephConfig: e.config, CephFSSecret: secret, Lease: lease})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	for k := 1; k <= 12; k++ {
		name := fmt.Sprintf("pv-cut%d", k)
		finished := e.cutAndResume(t, writer, name, k, e.pv(t, name))
		if got := e.readData(t, paths[k-1]); !bytes.Equal(got, e.data) {
			t.Errorf("k=%d: %s changed", k, paths[k-1])
		}
		if finished {
			t.Logf("the adoption takes %d writes", k)
			return
		}
	}
	t.Error("the adoption did not finish within 12 writes")
}

// BenchmarkCephFSAdopt measures what the adoption of a CephFS subvolume
// adds to its rewrite: n legacy subvolumes rewritten as static volumes,
// and n others rewritten and adopted (as rewrite -apply runs them:
// adoptConcurrency at once), on the real Ceph and kube-apiserver. The
// metric is the wall-clock difference a volume.
func BenchmarkCephFSAdopt(b *testing.B) {
	n := 20
	if v, err := strconv.Atoi(os.Getenv("CSIMIGRATE_BENCH_ADOPT")); err == nil && v > 0 {
		n = v
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e := newCephFSAdoptEnv(b)
		lease := e.writerLease(b)
		var targets [2][]apply.Target
		for _, withCeph := range []int{0, 1} {
			for k := range n {
				name := fmt.Sprintf("pv-%d-%d", withCeph, k)
				p := fmt.Sprintf("/volumes/%s/kubernetes-dynamic-pvc-%s", cephfsGroup, NewUUID())
				e.dirWithData(b, p, true)
				e.inTreePV(b, name, p)
				targets[withCeph] = append(targets[withCeph], apply.Target{Name: name})
			}
		}
		tr := e.configure(b)
		counted := countTools(b, e.tools)
		var took [2]time.Duration
		for _, withCeph := range []int{0, 1} {
			o := apply.Options{Concurrency: adoptConcurrency(), Lease: lease}
			if withCeph == 1 {
				o.Ceph, o.CephConfig, o.CephFSSecret = counted.tools, e.config, &v1.SecretReference{Namespace: cephfsSecretNS, Name: cephfsSecret}
			}
			w, err := apply.New(e.cs, tr, klogDiscard(), nil, o)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := time.Now()
			if _, err := w.PVs(context.Background(), targets[withCeph]); err != nil {
				b.Fatal(err)
			}
			took[withCeph] = time.Since(start)
			b.StopTimer()
		}
		per := (took[1] - took[0]) / time.Duration(n)
		b.Logf("%d CephFS PVs rewritten static in %s; with adoption in %s: %s more a volume", n, took[0].Round(time.Millisecond), took[1].Round(time.Millisecond), per.Round(time.Millisecond))
		b.ReportMetric(per.Seconds(), "s/adopted-volume")
		reportCalls(b, counted, n, e.tools, "cephfs."+FSName+".meta")
	}
}

// A static CephFS CSI PV (rewritten earlier without -adopt, as a cluster on
// 1.31 or later, where the in-tree plugin and thus the undo are gone, has
// them) is adopted in place by rewrite -apply -adopt -adopt-csi; its undo
// gives back exactly the static PV and removes the journal entry.
func TestCephFSAdoptStaticCSI(t *testing.T) {
	e := newCephFSAdoptEnv(t)
	path := "/volumes/" + cephfsGroup + "/kubernetes-dynamic-pvc-" + NewUUID()
	e.dirWithData(t, path, true)
	e.inTreePV(t, "pv-static", path)
	e.configure(t)
	// The static rewrite (no -adopt): the csimigrate helper always adopts,
	// so run the command directly.
	serveDriverConfig(t, e.cs)
	cmd := exec.Command(envBin, "rewrite", "-apply", "-kubeconfig", e.kc, "pv-static")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rewrite -apply: %v\n%s", err, out)
	}
	static := e.pv(t, "pv-static")
	if static.Spec.CSI == nil || static.Spec.CSI.VolumeAttributes["staticVolume"] != "true" || static.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain {
		t.Fatalf("the static rewrite: %+v", static.Spec)
	}
	secretArg := "-cephfs-secret=" + cephfsSecretNS + "/" + cephfsSecret
	out := e.csimigrate(t, 0, "rewrite", "-apply", "-adopt-csi", secretArg, "pv-static")
	if !strings.Contains(out, "pv/pv-static: adopted into Ceph CSI's journal as its own volume 0001-") {
		t.Errorf("rewrite -apply -adopt -adopt-csi:\n%s", out)
	}
	pv := e.pv(t, "pv-static")
	j := journalOfPV(t, pv)
	if st := e.journal(t, j); st != "written" || pv.Spec.CSI.VolumeAttributes["subvolumePath"] != path || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain {
		t.Fatalf("after -adopt-csi: journal %s, %+v", st, pv.Spec)
	}
	// Ceph CSI serves it as its own: a snapshot.
	if _, err := e.d.CephFSController.CreateSnapshot(callCtx(t), &csi.CreateSnapshotRequest{SourceVolumeId: pv.Spec.CSI.VolumeHandle, Name: "snap-" + NewUUID(),
		Parameters: map[string]string{"clusterID": pv.Spec.CSI.VolumeAttributes["clusterID"], "fsName": FSName}, Secrets: e.adminSecrets()}); err != nil {
		t.Errorf("CreateSnapshot of the adopted static volume: %v", err)
	}
	e.csimigrate(t, 0, "rewrite", "-apply", "-undo", "-adopt-csi", "pv-static")
	back := e.pv(t, "pv-static")
	if diff := cmp.Diff(static.Spec, back.Spec); diff != "" {
		t.Errorf("the undone PV (-static +after):\n%s", diff)
	}
	if diff := cmp.Diff(static.Annotations, back.Annotations); diff != "" {
		t.Errorf("the undone PV's annotations (-static +after):\n%s", diff)
	}
	if st := e.journal(t, j); st != "absent" {
		t.Errorf("the journal entry after the undo: %s", st)
	}
}

// cephfsDraw is one generated in-tree CephFS volume for the adoption
// oracle.
type cephfsDraw struct {
	Path   string // under the file system's root
	Layout bool   // an explicit layout, as ceph_volume_client gave
	ByProv bool   // provisioned by ceph.com/cephfs (else made by hand)
	Shared bool   // a second PV names the same path
}

func drawCephFS(rt *rapid.T, round int) cephfsDraw {
	name := rapid.SampledFrom([]string{"kubernetes-dynamic-pvc-" + NewUUID(), fmt.Sprintf("dir-%s-r%d", rapid.StringMatching(`[a-z0-9]{1,6}`).Draw(rt, "suffix"), round)}).Draw(rt, "name")
	place := rapid.SampledFrom([]string{"/volumes/" + cephfsGroup + "/", "/volumes/" + cephfsGroup + "/deeper/", "/shared/"}).Draw(rt, "place")
	return cephfsDraw{Path: place + name, Layout: rapid.IntRange(0, 3).Draw(rt, "layout") > 0, ByProv: rapid.Bool().Draw(rt, "byProvisioner"),
		Shared: rapid.IntRange(0, 4).Draw(rt, "shared") == 0}
}

// The CephFS adoption oracle: generated directories (in a subvolume group,
// one level deeper, outside /volumes; with and without an explicit layout;
// names with and without a UUID; made by ceph.com/cephfs or by hand; some
// named by a second PV). For each, what plan -read-ceph says (form,
// features, Retain) is compared with what the rewrite with -adopt makes of
// it and what Ceph CSI's CephFS controller then grants (a snapshot). A
// feature the plan promises that the driver refuses, or one it denies that
// the driver grants, is a false verdict. CSIMIGRATE_ADOPT_DRAWS sets the
// number of draws (default 6).
func TestCephFSAdoptOracle(t *testing.T) {
	e := newCephFSAdoptEnv(t)
	ctx := callCtx(t)
	draws := 6
	if s := os.Getenv("CSIMIGRATE_ADOPT_DRAWS"); s != "" {
		fmt.Sscan(s, &draws)
	}
	// Ceph CSI's cluster map with the group's entry, as the plan prints it.
	probe := "/volumes/" + cephfsGroup + "/probe"
	e.dirWithData(t, probe, true)
	e.inTreePV(t, "pv-probe", probe)
	e.configure(t)
	secretArg := "-cephfs-secret=" + cephfsSecretNS + "/" + cephfsSecret
	base := seed(t)
	var falseVerdicts, natives, statics int
	for round := range draws {
		var dr cephfsDraw
		rapid.Custom(func(rt *rapid.T) int { dr = drawCephFS(rt, round); return 0 }).Example(base + round)
		name := fmt.Sprintf("pv-oracle-%d", round)
		e.dirWithData(t, dr.Path, dr.Layout)
		by := ""
		if dr.ByProv {
			by = plugin.CephFSExternalProvisioner
		}
		e.inTreePVBy(t, name, dr.Path, by)
		if dr.Shared {
			e.inTreePVBy(t, name+"-twin", dr.Path, by)
		}
		planned := e.forms(t)[name]
		form, features, why := planned.Form, planned.Features, planned.FormWhy
		e.csimigrate(t, 0, "rewrite", "-apply", secretArg, name)
		got := e.pv(t, name)
		native := strings.HasPrefix(got.Spec.CSI.VolumeHandle, "0001-")
		if native != (form == string(adopt.FormNative)) {
			falseVerdicts++
			t.Errorf("draw %d %+v: the plan says %s (%q), the rewrite made handle %s", round, dr, form, why, got.Spec.CSI.VolumeHandle)
			continue
		}
		if native {
			keptRetain := got.Spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimRetain
			saysRetain := strings.Contains(strings.Join(why, ";"), "keeps reclaim policy Retain")
			if keptRetain != saysRetain {
				falseVerdicts++
				t.Errorf("draw %d %+v: the PV ends %s, the plan says %q", round, dr, got.Spec.PersistentVolumeReclaimPolicy, why)
			}
			natives++
		} else {
			statics++
		}
		snap, err := e.d.CephFSController.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: got.Spec.CSI.VolumeHandle, Name: "snap-" + NewUUID(),
			Parameters: map[string]string{"clusterID": got.Spec.CSI.VolumeAttributes["clusterID"], "fsName": FSName}, Secrets: e.adminSecrets()})
		promised := slices.Contains(features, string(adopt.FeatureSnapshot))
		if (err == nil) != promised {
			falseVerdicts++
			t.Errorf("draw %d %+v: the plan promises snapshots %t (%s), Ceph CSI's CreateSnapshot: %v", round, dr, promised, form, err)
		}
		if err == nil {
			if _, err := e.d.CephFSController.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: snap.Snapshot.SnapshotId, Secrets: e.adminSecrets()}); err != nil {
				t.Errorf("draw %d: DeleteSnapshot: %v", round, err)
			}
		}
		if data := e.readData(t, dr.Path); !bytes.Equal(data, e.data) {
			t.Errorf("draw %d: %s changed", round, dr.Path)
		}
	}
	t.Logf("%d draws (seed %d): %d adopted, %d static; false verdicts: %d", draws, base, natives, statics, falseVerdicts)
}

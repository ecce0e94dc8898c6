package cephtest

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csimigrate/csimigrate/secrets"
)

// adminMount mounts the file system's root with ceph-fuse as client.admin
// and returns the mount point; it is unmounted when the test ends.
func adminMount(t testing.TB, c *Cluster) string {
	t.Helper()
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	// Per-mount pid file and admin socket: two ceph-fuse of one client
	// name collide on the defaults.
	if _, err := run(callCtx(t), nil, "ceph-fuse", "-c", c.Conf, "-n", "client.admin", "--client_fs", FSName,
		"--pid_file", filepath.Join(dir, "fuse.pid"), "--admin_socket", filepath.Join(dir, "fuse.asok"), mnt); err != nil {
		t.Fatal(err)
	}
	// The pid is read now: ceph-fuse removes its pid file when it exits,
	// which it may do as soon as it is unmounted.
	b, err := os.ReadFile(filepath.Join(dir, "fuse.pid"))
	if err != nil {
		t.Fatalf("the admin mount's ceph-fuse pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Fatalf("the admin mount's ceph-fuse pid file holds %q", b)
	}
	t.Cleanup(func() {
		if _, err := run(callCtx(t), nil, "umount", mnt); err != nil {
			t.Errorf("unmounting the admin mount: %v", err)
		}
		stopFuse(t, pid)
	})
	return mnt
}

// stopFuse stops the ceph-fuse daemon pid: after the unmount it usually
// exits by itself; one still there after 10 s (seen stuck in its shutdown)
// is killed.
func stopFuse(t testing.TB, pid int) {
	t.Helper()
	alive := func() bool { return syscall.Kill(pid, 0) == nil }
	for range 40 {
		if !alive() {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for range 40 {
		if !alive() {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Errorf("ceph-fuse %d of the admin mount does not stop", pid)
}

func inTreeCephFSPV(name, path, user, secret string) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteMany},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			MountOptions:                  []string{"mds_namespace=" + FSName},
			PersistentVolumeSource: v1.PersistentVolumeSource{CephFS: &v1.CephFSPersistentVolumeSource{
				Monitors: []string{MonitorV1}, Path: path, User: user,
				SecretRef: &v1.SecretReference{Name: secret, Namespace: "apps"},
			}},
		},
	}
}

// TestCephFSStaticVolume stages and publishes translated static CephFS
// volumes on Ceph CSI's CephFS node server, with the volume context of our
// translation and the secret secrets.CephFSCSISecret derives, for a user
// whose caps are limited to the volume's path (ceph fs authorize). The file
// written beforehand is read through the published target. A volume whose
// path is outside the user's caps, and the in-tree secret instead of the
// derived one, are refused.
func TestCephFSStaticVolume(t *testing.T) {
	c, d := cephEnv(t)
	ctx := callCtx(t)
	const user = "app"
	mnt := adminMount(t, c)
	for _, dir := range []string{"volumes/static1", "volumes/other"} {
		if err := os.MkdirAll(filepath.Join(mnt, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const content = "written before the migration\n"
	if err := os.WriteFile(filepath.Join(mnt, "volumes/static1/hello.txt"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ceph(ctx, "fs", "authorize", FSName, "client."+user, "/volumes/static1", "rw"); err != nil {
		t.Fatal(err)
	}
	key, err := c.Ceph(ctx, "auth", "get-key", "client."+user)
	if err != nil {
		t.Fatal(err)
	}
	inTreeSecret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cephfs-app", Namespace: "apps"},
		Data: map[string][]byte{"key": []byte(strings.TrimSpace(key))}}
	pv := inTreeCephFSPV("shared", "/volumes/static1", user, inTreeSecret.Name)
	outside := inTreeCephFSPV("outside", "/volumes/other", user, inTreeSecret.Name)
	tr, logger := configure(t, d, pv, outside)
	derived, err := secrets.CephFSCSISecret(inTreeSecret, user)
	if err != nil {
		t.Fatal(err)
	}

	translated := func(pv *v1.PersistentVolume) *v1.CSIPersistentVolumeSource {
		t.Helper()
		out, err := tr.TranslateInTreePVToCSI(logger, pv)
		if err != nil {
			t.Fatal(err)
		}
		src := out.Spec.CSI
		if ref := src.NodeStageSecretRef; ref == nil || ref.Name != derived.Name || ref.Namespace != derived.Namespace {
			t.Fatalf("nodeStageSecretRef %v, want the derived secret %s/%s", ref, derived.Namespace, derived.Name)
		}
		return src
	}
	// stage stages a translated volume with the given secret data. The
	// kernel client cannot mount here (no modules), so the volume context
	// asks for ceph-fuse, as in-tree's fallback did; everything else is the
	// translation's.
	stage := func(src *v1.CSIPersistentVolumeSource, sec map[string]string) (string, error) {
		staging := filepath.Join(t.TempDir(), "staging")
		if err := os.Mkdir(staging, 0o750); err != nil {
			t.Fatal(err)
		}
		vc := maps.Clone(src.VolumeAttributes)
		vc["mounter"] = "fuse"
		_, err := d.CephFS.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: src.VolumeHandle, StagingTargetPath: staging,
			VolumeCapability: rwx(), VolumeContext: vc, Secrets: sec})
		return staging, err
	}

	src := translated(pv)
	staging, err := stage(src, secrets.SecretStringData(derived))
	if err != nil {
		t.Fatalf("NodeStageVolume with the translated context %v and the derived secret: %v\n%s", src.VolumeAttributes, err, d.Log("cephcsi-cephfs"))
	}
	target := filepath.Join(t.TempDir(), "target")
	if _, err := d.CephFS.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: src.VolumeHandle, StagingTargetPath: staging,
		TargetPath: target, VolumeCapability: rwx(), VolumeContext: src.VolumeAttributes}); err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}
	if fstype := mountType(t, target); fstype != "fuse.ceph-fuse" {
		t.Errorf("the published target is a %q mount, want fuse.ceph-fuse", fstype)
	}
	got, err := os.ReadFile(filepath.Join(target, "hello.txt"))
	if err != nil || string(got) != content {
		t.Errorf("reading hello.txt through the published volume: %q, %v; want %q", got, err, content)
	}
	if _, err := d.CephFS.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: src.VolumeHandle, TargetPath: target}); err != nil {
		t.Errorf("NodeUnpublishVolume: %v", err)
	}
	if _, err := d.CephFS.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: src.VolumeHandle, StagingTargetPath: staging}); err != nil {
		t.Errorf("NodeUnstageVolume: %v", err)
	}
	if fstype := mountType(t, staging); fstype != "" {
		t.Errorf("%s is still a %s mount after unstage", staging, fstype)
	}

	// The in-tree secret, as a migration that does not derive one would
	// pass it: Ceph CSI's node server wants userID and userKey.
	if _, err := stage(src, secrets.SecretStringData(inTreeSecret)); codeOf(err) != codes.Internal || !strings.Contains(err.Error(), "missing ID field 'userID'") {
		t.Errorf("NodeStageVolume with the in-tree secret: %v (%v), want Internal, missing userID", codeOf(err), err)
	}
	// A path outside the user's caps.
	if _, err := stage(translated(outside), secrets.SecretStringData(derived)); codeOf(err) != codes.Internal || !strings.Contains(err.Error(), "non-allowable root") {
		t.Errorf("NodeStageVolume outside the user's caps: %v (%v), want Internal with non-allowable root", codeOf(err), err)
	}
}

func rwx() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
	}
}

// mountType is the file-system type mounted at path ("" when none), from
// /proc/self/mounts.
func mountType(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	typ := ""
	for _, l := range lines(string(b)) {
		f := strings.Fields(l)
		if len(f) >= 3 && f[1] == path {
			typ = f[2]
		}
	}
	return typ
}

// TestCephFSInlineVolumeMoved: a pod manifest as kubernetes/examples
// publishes it (no namespace, an inline cephfs volume with a secretRef).
// The plan calls it not migratable and lists the Secret its PV form needs;
// the PV `csimigrate translate` prints for it is staged by Ceph CSI's
// CephFS node server with that Secret made exactly as the plan lists it
// (userID as given, userKey the source secret's key), and the file written
// beforehand is read through it.
func TestCephFSInlineVolumeMoved(t *testing.T) {
	c, d := cephEnv(t)
	ctx := callCtx(t)
	const user = "inline"
	mnt := adminMount(t, c)
	if err := os.MkdirAll(filepath.Join(mnt, "volumes/inline1"), 0o755); err != nil {
		t.Fatal(err)
	}
	const content = "written through the inline volume\n"
	if err := os.WriteFile(filepath.Join(mnt, "volumes/inline1/hello.txt"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ceph(ctx, "fs", "authorize", FSName, "client."+user, "/volumes/inline1", "rw"); err != nil {
		t.Fatal(err)
	}
	key, err := c.Ceph(ctx, "auth", "get-key", "client."+user)
	if err != nil {
		t.Fatal(err)
	}
	key = strings.TrimSpace(key)
	pod := &v1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "cephfs2"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "kubernetes/pause"}}, Volumes: []v1.Volume{{Name: "cephfs", VolumeSource: v1.VolumeSource{
			CephFS: &v1.CephFSVolumeSource{Monitors: []string{MonitorV1}, Path: "/volumes/inline1", User: user, SecretRef: &v1.LocalObjectReference{Name: "ceph-secret"}}}}}}}
	inTree := &v1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: "ceph-secret"},
		Data: map[string][]byte{"key": []byte(key)}}

	var plan struct {
		InlineVolumes []struct {
			Workload   string `json:"workload"`
			Migratable bool   `json:"migratable"`
		} `json:"inlineVolumes"`
		Secrets []struct {
			Namespace, Name, Action, From string
			Fields                        []string
		} `json:"secrets"`
	}
	if err := json.Unmarshal(planJSON(t, pod, inTree), &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.InlineVolumes) != 1 || plan.InlineVolumes[0].Migratable || plan.InlineVolumes[0].Workload != "Pod default/cephfs2" {
		t.Fatalf("plan: inline volumes %+v", plan.InlineVolumes)
	}
	if len(plan.Secrets) != 1 || plan.Secrets[0].Action != "create" || plan.Secrets[0].From != "default/ceph-secret" {
		t.Fatalf("plan: secrets %+v, want one to create from default/ceph-secret", plan.Secrets)
	}
	// The Secret, made as the plan lists it.
	sp := plan.Secrets[0]
	data := map[string]string{}
	for _, f := range sp.Fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			v = key // a field named without value: the source secret's key
		}
		data[k] = v
	}
	_, _ = configure(t, d, pod, inTree)
	pv := translatedInline(t, pod, inTree)
	src := pv.Spec.CSI
	if ref := src.NodeStageSecretRef; ref == nil || ref.Namespace != sp.Namespace || ref.Name != sp.Name {
		t.Fatalf("the PV's nodeStageSecretRef %v is not the secret the plan lists (%s/%s)", ref, sp.Namespace, sp.Name)
	}
	staging := filepath.Join(t.TempDir(), "staging")
	if err := os.Mkdir(staging, 0o750); err != nil {
		t.Fatal(err)
	}
	vc := maps.Clone(src.VolumeAttributes)
	vc["mounter"] = "fuse" // the kernel client cannot mount here
	if _, err := d.CephFS.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: src.VolumeHandle, StagingTargetPath: staging,
		VolumeCapability: rwx(), VolumeContext: vc, Secrets: data}); err != nil {
		t.Fatalf("NodeStageVolume with the printed PV and the planned secret: %v\n%s", err, d.Log("cephcsi-cephfs"))
	}
	target := filepath.Join(t.TempDir(), "target")
	if _, err := d.CephFS.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: src.VolumeHandle, StagingTargetPath: staging,
		TargetPath: target, VolumeCapability: rwx(), VolumeContext: src.VolumeAttributes}); err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(target, "hello.txt")); err != nil || string(got) != content {
		t.Errorf("reading hello.txt: %q, %v", got, err)
	}
	if _, err := d.CephFS.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: src.VolumeHandle, TargetPath: target}); err != nil {
		t.Errorf("NodeUnpublishVolume: %v", err)
	}
	if _, err := d.CephFS.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: src.VolumeHandle, StagingTargetPath: staging}); err != nil {
		t.Errorf("NodeUnstageVolume: %v", err)
	}
}

// translatedInline runs `csimigrate translate` on the objects and returns
// the CSI PV it prints for the inline volume.
func translatedInline(t testing.TB, objs ...runtime.Object) *v1.PersistentVolume {
	t.Helper()
	out := runCommand(t, []string{"translate", "-o", "json"}, objs...)
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("translate -o json: %v\n%s", err, out)
	}
	for _, item := range list.Items {
		var pv v1.PersistentVolume
		if err := json.Unmarshal(item, &pv); err == nil && pv.Kind == "PersistentVolume" && pv.Spec.CSI != nil {
			return &pv
		}
	}
	t.Fatalf("translate printed no PV:\n%s", out)
	return nil
}

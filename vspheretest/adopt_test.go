package vspheretest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/apply/vcenter"
	"github.com/csimigrate/csimigrate/translate"
)

// createInTreePV creates a claim and an in-tree vSphere PV bound to it, on
// a disk created at path.
func createInTreePV(t *testing.T, vc *VCenter, c kubernetes.Interface, name, path, policy string) *v1.PersistentVolume {
	t.Helper()
	vc.CreateDisk(t, path, 1024)
	return testenv.CreateBoundPV(t, c, "apps", name, func(pv *v1.PersistentVolume) {
		pv.Spec.PersistentVolumeSource = v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: path, FSType: "ext4", StoragePolicyName: policy}}
	})
}

// sameVolume compares what an undo must give back: the spec (source,
// claim, policy, capacity) and the annotations.
func sameVolume(t *testing.T, want, got *v1.PersistentVolume) {
	t.Helper()
	if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
		t.Errorf("the PV after the undo (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(want.Annotations, got.Annotations); diff != "" {
		t.Errorf("annotations after the undo (-before +after):\n%s", diff)
	}
}

// `csimigrate rewrite -apply -adopt -vsphere-conf` gives an in-tree vSphere
// PV the handle the vSphere CSI driver gives its own volumes: the disk is
// registered as a First Class Disk and CNS volume, the PV's handle is that
// ID, its claim stays bound and its reclaim policy comes back once vCenter
// confirms the ID. The driver then snapshots the volume by that handle
// (where it refuses the datastore path), publishes it to a node VM,
// expands and unpublishes it. A second run changes nothing; the undo gives
// the in-tree PV back exactly (the disk stays registered); adopting again
// registers nothing; DeleteVolume by the handle removes the First Class
// Disk.
func TestVSphereAdoptRewriteDriverSnapshots(t *testing.T) {
	vc, srv, d := startPeers(t)
	ctx := context.Background()
	kc, err := srv.WriteKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	path := "[LocalDS_0] kubevols/kubernetes-dynamic-pvc-4d2e8f1a-3b7c-4e5d-9f60-1a2b3c4d5e6f.vmdk"
	orig := createInTreePV(t, vc, srv.Client, "pvc-4d2e8f1a", path, existingPolicy)
	conf := confFile(t, vc, vc.Password)
	adoptArgs := []string{"rewrite", "-apply", "-adopt", "-vsphere-conf", conf, "-kubeconfig", kc, "pvc-4d2e8f1a"}
	// A dry run says it would register the disk, and writes nothing: the
	// run after it registers it.
	dry := append([]string{"rewrite", "-apply", "-dry-run"}, adoptArgs[2:]...)
	if code, out, stderr := csimigrate(t, dry...); code != 0 || !strings.Contains(string(out), "would register disk "+path) {
		t.Errorf("rewrite -apply -adopt -dry-run: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr := csimigrate(t, adoptArgs...)
	if code != 0 || !strings.Contains(string(out), "register disk "+path+" as a First Class Disk") {
		t.Fatalf("rewrite -apply -adopt: exit %d\n%s\n%s", code, out, stderr)
	}
	pv, err := srv.Client.CoreV1().PersistentVolumes().Get(ctx, orig.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	handle := pv.Spec.CSI.VolumeHandle
	disk, ok, err := adopt.VSphereDiskOf(pv)
	switch {
	case err != nil || !ok || disk.Path != path || disk.FCD != handle:
		t.Fatalf("the adopted PV records %+v (%v, %v), handle %q", disk, ok, err, handle)
	case pv.Spec.CSI.Driver != "csi.vsphere.vmware.com" || strings.Contains(handle, ".vmdk"):
		t.Fatalf("the adopted PV: driver %s, handle %q; want the First Class Disk ID", pv.Spec.CSI.Driver, handle)
	case pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete:
		t.Errorf("reclaim policy %s, want Delete back", pv.Spec.PersistentVolumeReclaimPolicy)
	case !vc.FCDExists(t, handle):
		t.Errorf("vCenter has no First Class Disk %s", handle)
	}
	testenv.RewrittenStates(t, srv.Client, "apps", []string{orig.Name})

	// The driver serves it as its own volume, snapshots included.
	_, err = d.Controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: path, Name: "by-path"})
	if err == nil {
		t.Error("the driver snapshotted the datastore path")
	}
	snap, err := d.Controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: handle, Name: "adopted"})
	if err != nil {
		t.Fatalf("CreateSnapshot of the adopted PV's handle: %v", err)
	}
	if !snap.Snapshot.ReadyToUse || snap.Snapshot.SourceVolumeId != handle {
		t.Errorf("the snapshot: %+v", snap.Snapshot)
	}
	if _, err := d.Controller.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: snap.Snapshot.SnapshotId}); err != nil {
		t.Errorf("DeleteSnapshot: %v", err)
	}
	node := vc.VMUUID(t, "DC0_H0_VM0")
	if _, err := d.Controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: handle, NodeId: node, VolumeCapability: ext4Writer,
		VolumeContext: pv.Spec.CSI.VolumeAttributes}); err != nil {
		t.Errorf("ControllerPublishVolume of the adopted PV: %v", err)
	}
	if _, err := d.Controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: handle,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 30}, VolumeCapability: ext4Writer}); err != nil {
		t.Errorf("ControllerExpandVolume of the adopted PV: %v", err)
	}
	if _, err := d.Controller.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: handle, NodeId: node}); err != nil {
		t.Errorf("ControllerUnpublishVolume: %v", err)
	}

	// Run twice (over every in-tree PV of the cluster): nothing to do.
	if code, out, stderr := csimigrate(t, adoptArgs[:len(adoptArgs)-1]...); code != 0 || strings.Contains(string(out), "register disk") || strings.Contains(string(out), "delete the") {
		t.Errorf("a second run: exit %d\n%s\n%s", code, out, stderr)
	}
	// The undo's review shows the in-tree PV with its datastore path.
	if code, out, stderr := csimigrate(t, "rewrite", "-undo", "-live", "-kubeconfig", kc, "-o", "yaml"); code != 0 || !strings.Contains(string(out), "volumePath: '"+path+"'") {
		t.Errorf("the undo's review: exit %d\n%s\n%s", code, out, stderr)
	}
	// The undo gives the in-tree PV back; the disk stays registered.
	if code, out, stderr := csimigrate(t, "rewrite", "-apply", "-undo", "-kubeconfig", kc, orig.Name); code != 0 {
		t.Fatalf("rewrite -apply -undo: exit %d\n%s\n%s", code, out, stderr)
	}
	back, err := srv.Client.CoreV1().PersistentVolumes().Get(ctx, orig.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameVolume(t, orig, back)
	if !vc.FCDExists(t, handle) {
		t.Error("the undo removed the First Class Disk")
	}
	// Adopted again: the disk is registered already, the ID is the same.
	code, out, stderr = csimigrate(t, adoptArgs...)
	if code != 0 || strings.Contains(string(out), "register disk") {
		t.Fatalf("adopting again: exit %d\n%s\n%s", code, out, stderr)
	}
	pv, err = srv.Client.CoreV1().PersistentVolumes().Get(ctx, orig.Name, metav1.GetOptions{})
	if err != nil || pv.Spec.CSI == nil || pv.Spec.CSI.VolumeHandle != handle {
		t.Fatalf("adopted again: %v %+v", err, pv.Spec.PersistentVolumeSource)
	}
	// The driver deletes the volume by its handle: the disk is gone.
	if _, err := d.Controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: handle}); err != nil {
		t.Fatalf("DeleteVolume of the adopted PV's handle: %v", err)
	}
	if vc.FCDExists(t, handle) {
		t.Error("the First Class Disk is still there after DeleteVolume")
	}
}

// The adoption and its undo, interrupted at every write: each step is taken
// by a new Writer (a new process, as far as the cluster can tell), which
// resumes from what the cluster and vCenter show. The claim is never lost,
// the disk is registered once, and the ends are the adopted PV and then the
// in-tree PV exactly as it was.
func TestVSphereAdoptInterruptedAtEveryWrite(t *testing.T) {
	vc, srv, _ := startPeers(t)
	ctx := context.Background()
	path := "[LocalDS_0] kubevols/kubernetes-dynamic-pvc-7e1f0a2b-5c4d-4e3f-8a9b-0c1d2e3f4a5b.vmdk"
	orig := createInTreePV(t, vc, srv.Client, "pvc-7e1f0a2b", path, "")
	cfg, err := vcenter.ParseConfig([]byte(driverConf(vc, vc.Password)))
	if err != nil {
		t.Fatal(err)
	}
	logger := klog.Background().V(100)
	client, err := vcenter.Dial(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	// The writer Lease, which every Writer needs to write, for the test.
	_, lease, err := apply.HoldLease(ctx, srv.Client, apply.DefaultStateNamespace, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lease.Release(context.Background()) })
	stepAll := func(dir apply.Direction) []string {
		var writes []string
		for range 100 {
			w, err := apply.New(srv.Client, tr, logger, nil, apply.Options{VSphere: client, Direction: dir, Lease: lease})
			if err != nil {
				t.Fatal(err)
			}
			p, err := w.PV(apply.Target{Name: orig.Name}).Step(ctx)
			if err != nil {
				t.Fatalf("after %q: %v", writes, err)
			}
			if p.Wrote != "" {
				writes = append(writes, p.Wrote)
			}
			// The claim is never lost, nor both the PV and its saved
			// replacement.
			if _, err := srv.Client.CoreV1().PersistentVolumeClaims("apps").Get(ctx, orig.Name, metav1.GetOptions{}); err != nil {
				t.Fatalf("after %q: the claim: %v", writes, err)
			}
			_, pvErr := srv.Client.CoreV1().PersistentVolumes().Get(ctx, orig.Name, metav1.GetOptions{})
			_, cmErr := srv.Client.CoreV1().ConfigMaps(apply.DefaultStateNamespace).Get(ctx, apply.StateName(orig.Name), metav1.GetOptions{})
			if pvErr != nil && cmErr != nil {
				t.Fatalf("after %q: neither the PV (%v) nor its saved replacement (%v)", writes, pvErr, cmErr)
			}
			if p.Done {
				return writes
			}
		}
		t.Fatalf("not done after 100 steps: %q", writes)
		return nil
	}
	writes := stepAll(apply.Rewrite)
	registrations := 0
	for _, w := range writes {
		if strings.HasPrefix(w, "register disk") {
			registrations++
		}
	}
	if registrations != 1 {
		t.Errorf("%d registrations in %q; want 1", registrations, writes)
	}
	pv, err := srv.Client.CoreV1().PersistentVolumes().Get(ctx, orig.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if disk, ok, _ := adopt.VSphereDiskOf(pv); !ok || pv.Spec.CSI.VolumeHandle != disk.FCD || !vc.FCDExists(t, disk.FCD) ||
		pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
		t.Fatalf("the adopted PV: %+v, %s", pv.Spec.PersistentVolumeSource, pv.Spec.PersistentVolumeReclaimPolicy)
	}
	t.Logf("adoption: %d writes: %q", len(writes), writes)
	undoWrites := stepAll(apply.Undo)
	t.Logf("undo: %d writes: %q", len(undoWrites), undoWrites)
	back, err := srv.Client.CoreV1().PersistentVolumes().Get(ctx, orig.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameVolume(t, orig, back)
}

// `csimigrate controller -adopt -vsphere-conf` adopts an in-tree vSphere PV
// as the command does: the PV ends with its First Class Disk ID as handle,
// bound, Delete restored, and the driver snapshots it.
func TestVSphereAdoptByControllerDriverSnapshots(t *testing.T) {
	vc, srv, d := startPeers(t)
	ctx := context.Background()
	kc, err := srv.WriteKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := commandBinary()
	if err != nil {
		t.Fatal(err)
	}
	path := "[LocalDS_0] kubevols/kubernetes-dynamic-pvc-9a8b7c6d-1e2f-4a3b-8c4d-5e6f7a8b9c0d.vmdk"
	orig := createInTreePV(t, vc, srv.Client, "pvc-9a8b7c6d", path, "")
	// The driver's installation registers it; the controller waits for it.
	if _, err := srv.Client.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "csi.vsphere.vmware.com"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	args := []string{"controller", "-kubeconfig", kc, "-metrics-address", "", "-v",
		"-recheck", "2s", "-status-every", "1s", "-adopt", "-vsphere-conf", confFile(t, vc, vc.Password)}
	// First a dry run (as the base runs it, with the adopt-vsphere
	// overlay's adoption): it reports the adoption the real run makes,
	// registration included, writes nothing, and leads by its own Lease,
	// so the acting controller started beside it writes.
	if err := srv.Spawn("csimigrate-controller-dry", bin, append(args, "-identity", "vspheretest-dry", "-dry-run")...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("csimigrate controller -dry-run:\n%s", srv.Logs("csimigrate-controller-dry"))
		}
	})
	would := waitEvent(t, srv.Client, orig.Name, "WouldMigrate")
	if !strings.Contains(would, "would register disk "+path+" as a First Class Disk") {
		t.Errorf("the dry run's verdict does not name the registration the adoption makes: %q", would)
	}
	if now, err := srv.Client.CoreV1().PersistentVolumes().Get(ctx, orig.Name, metav1.GetOptions{}); err != nil || now.ResourceVersion != orig.ResourceVersion {
		t.Fatalf("the dry run changed the PV: %v", err)
	}
	if err := srv.Spawn("csimigrate-controller", bin, append(args, "-identity", "vspheretest")...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("csimigrate controller:\n%s", srv.Logs("csimigrate-controller"))
		}
	})
	var pv *v1.PersistentVolume
	deadline := time.Now().Add(90 * time.Second)
	for {
		pv, err = srv.Client.CoreV1().PersistentVolumes().Get(ctx, orig.Name, metav1.GetOptions{})
		if err == nil && pv.Spec.CSI != nil && pv.Spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimDelete {
			break
		}
		if time.Now().After(deadline) {
			var reasons []string
			if evs, lerr := srv.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + orig.Name}); lerr == nil {
				for _, e := range evs.Items {
					reasons = append(reasons, e.Reason+": "+e.Message)
				}
			}
			t.Fatalf("the controller did not adopt the PV in 90 s: %v, source %+v; Events: %q", err, pv.Spec.PersistentVolumeSource, reasons)
		}
		time.Sleep(500 * time.Millisecond)
	}
	disk, ok, err := adopt.VSphereDiskOf(pv)
	if err != nil || !ok || disk.Path != path || pv.Spec.CSI.VolumeHandle != disk.FCD {
		t.Fatalf("the controller's PV: %+v (%v %v), handle %q", disk, ok, err, pv.Spec.CSI.VolumeHandle)
	}
	testenv.RewrittenStates(t, srv.Client, "apps", []string{orig.Name})
	// The real run did what the dry run said: the adoption, noted.
	if note := waitEvent(t, srv.Client, orig.Name, "MigrationNote"); !strings.Contains(note, "First Class Disk") {
		t.Errorf("the acting controller's note: %q, want the adoption the dry run reported", note)
	}
	snap, err := d.Controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: pv.Spec.CSI.VolumeHandle, Name: "by-controller"})
	if err != nil || !snap.Snapshot.ReadyToUse {
		t.Fatalf("CreateSnapshot of the controller's adopted PV: %v", err)
	}
}

// waitEvent waits up to 60 s for an Event of reason on the PV name and
// returns its message.
func waitEvent(t *testing.T, c kubernetes.Interface, name, reason string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		evs, err := c.CoreV1().Events("").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.kind=PersistentVolume,involvedObject.name=" + name + ",reason=" + reason})
		if err == nil && len(evs.Items) > 0 {
			return evs.Items[0].Message
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s Event on pv/%s in 60 s (%v)", reason, name, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

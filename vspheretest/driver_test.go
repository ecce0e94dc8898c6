package vspheretest

import (
	"context"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

var migrationGVR = schema.GroupVersionResource{Group: "cns.vmware.com", Version: "v1alpha1", Resource: "cnsvspherevolumemigrations"}

// startPeers starts vcsim, kube-apiserver and the vSphere CSI driver's
// controller against them, each stopped when the test ends.
func startPeers(t *testing.T) (*VCenter, *testenv.Server, *Driver) {
	t.Helper()
	vc := StartVCenter(t)
	srv, err := testenv.Start(os.Stderr)
	if err != nil {
		t.Fatalf("kube-apiserver: %v", err)
	}
	t.Cleanup(srv.Stop)
	return vc, srv, StartDriver(t, srv, vc)
}

// ext4Writer is the capability the tests ask for: a single-node writer
// ext4 file system.
var ext4Writer = &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "ext4"}},
	AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}

// mapAsSyncer creates the driver's migration mapping of a registered disk
// (what its syncer saves after registering one), once the driver has
// installed the CRD.
func mapAsSyncer(t *testing.T, dyn dynamic.Interface, path, id string) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cns.vmware.com/v1alpha1", "kind": "CnsVSphereVolumeMigration",
		"metadata": map[string]any{"name": id}, "spec": map[string]any{"volumepath": path, "volumeid": id, "protectvolumefromvmdelete": false}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := dyn.Resource(migrationGVR).Create(context.Background(), obj, metav1.CreateOptions{})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the CnsVSphereVolumeMigration of %s: %v", path, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// An in-tree vSphere PV rewritten by csimigrate keeps its datastore path
// as its CSI handle; the vSphere CSI driver serves that handle through its
// migration mapping once the disk is registered (the syncer's part, played
// here): it publishes the volume to a node VM, expands it and unpublishes
// it, and refuses to snapshot it (the driver's own answer: a migrated
// volume cannot be snapshotted, which is what adoption to First Class Disk
// ids is for); deleting it by that handle removes the First Class Disk.
func TestVSphereDriverServesRewrittenPV(t *testing.T) {
	vc, srv, d := startPeers(t)
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	path := "[LocalDS_0] kubevols/kubernetes-dynamic-pvc-6f1c2a4e-0d1b-4b53-9a61-2b0c1d9a7e11.vmdk"
	vc.CreateDisk(t, path, 1024)
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-6f1c2a4e-0d1b-4b53-9a61-2b0c1d9a7e11",
		Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "kubernetes.io/vsphere-volume"}},
		Spec: v1.PersistentVolumeSpec{Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource:        v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: path, FSType: "ext4"}}}}
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	r, err := rewrite.Rewrite(tr, klog.Background().V(100), pv, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	created, err := srv.Client.CoreV1().PersistentVolumes().Create(ctx, r.CSI, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kube-apiserver refuses the rewritten PV: %v", err)
	}
	handle := created.Spec.CSI.VolumeHandle
	if created.Spec.CSI.Driver != "csi.vsphere.vmware.com" || handle != path {
		t.Fatalf("the rewritten PV: driver %s, handle %q; want csi.vsphere.vmware.com and the path", created.Spec.CSI.Driver, handle)
	}

	// Before the disk is registered, the driver cannot serve the handle.
	node := vc.VMUUID(t, "DC0_H0_VM0")
	publish := &csi.ControllerPublishVolumeRequest{VolumeId: handle, NodeId: node, VolumeCapability: ext4Writer, VolumeContext: created.Spec.CSI.VolumeAttributes}
	if _, err := d.Controller.ControllerPublishVolume(ctx, publish); err == nil {
		t.Fatal("the driver published a path it has no mapping for")
	}

	// The syncer's part: FCD, CNS volume, mapping.
	id := vc.RegisterAsSyncer(t, path, pv.Name)
	mapAsSyncer(t, dyn, path, id)
	var resp *csi.ControllerPublishVolumeResponse
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err = d.Controller.ControllerPublishVolume(ctx, publish)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		t.Fatalf("ControllerPublishVolume of the rewritten PV's handle: %v", err)
	}
	t.Logf("published: %v", resp.PublishContext)
	served := map[string]bool{"publish": true}
	if _, err := d.Controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: handle,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 30}, VolumeCapability: ext4Writer}); err != nil {
		t.Errorf("ControllerExpandVolume of the rewritten PV's handle: %v", err)
	} else {
		served["expand"] = true
	}
	_, err = d.Controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: handle, Name: "snap-1"})
	if status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), "migrated") {
		t.Errorf("CreateSnapshot of the migration handle: %v; want the driver's Unimplemented for a migrated volume", err)
	}
	if err == nil {
		served["snapshot"] = true
	}
	if _, err := d.Controller.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: handle, NodeId: node}); err != nil {
		t.Errorf("ControllerUnpublishVolume: %v", err)
	}
	if _, err := d.Controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: handle}); err != nil {
		t.Fatalf("DeleteVolume of the rewritten PV's handle: %v", err)
	}
	served["delete"] = true
	if vc.FCDExists(t, id) {
		t.Error("the First Class Disk is still there after DeleteVolume")
	}

	// The plan said so: the PV's form and features are what the driver
	// served, no more and no less.
	pl := plan.New(tr, klog.Background().V(100), plan.Options{})
	pl.Add(pv)
	report := pl.Finish()
	if len(report.Volumes) != 1 {
		t.Fatalf("the plan has %d volumes", len(report.Volumes))
	}
	v := report.Volumes[0]
	// The plan gives the form adoption makes (native), and says what the
	// migration handle gets without it: exactly what the driver served.
	planned := map[string]bool{}
	for _, f := range adopt.VSphereFeatures(adopt.FormMigration) {
		planned[string(f)] = true
	}
	if v.Form != "native" || !maps.Equal(planned, served) || !strings.Contains(strings.Join(v.FormWhy, " "), "otherwise the migration handle") {
		t.Errorf("the plan says form %q, features %v (%q); without adoption %v; the driver served %v", v.Form, v.Features, v.FormWhy, planned, served)
	}
}

// The form adoption gives a vSphere volume: its First Class Disk id as the
// CSI handle, as the driver's own volumes have. Once the disk is
// registered (the syncer's part, played here), the driver snapshots it by
// that id (where it refuses the datastore path), deletes the snapshot,
// publishes, expands, and deletes the volume and its disk, without any
// migration mapping.
func TestVSphereDriverSnapshotsFCDHandle(t *testing.T) {
	vc, _, d := startPeers(t)
	ctx := context.Background()
	path := "[LocalDS_0] kubevols/kubernetes-dynamic-pvc-0b3c5a4e-6f1d-11ec-9f4b-0242ac110002.vmdk"
	vc.CreateDisk(t, path, 1024)
	id := vc.RegisterAsSyncer(t, path, "pvc-0b3c5a4e-6f1d-11ec-9f4b-0242ac110002")

	_, err := d.Controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: path, Name: "by-path"})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("CreateSnapshot by the datastore path: %v; want Unimplemented", err)
	}
	snap, err := d.Controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: id, Name: "by-id"})
	if err != nil {
		t.Fatalf("CreateSnapshot by the First Class Disk id: %v", err)
	}
	served := map[string]bool{}
	if !snap.Snapshot.ReadyToUse || snap.Snapshot.SourceVolumeId != id {
		t.Errorf("the snapshot: %+v", snap.Snapshot)
	} else {
		served["snapshot"] = true
	}
	if _, err := d.Controller.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: snap.Snapshot.SnapshotId}); err != nil {
		t.Errorf("DeleteSnapshot: %v", err)
	}
	node := vc.VMUUID(t, "DC0_H0_VM0")
	if _, err := d.Controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: node, VolumeCapability: ext4Writer}); err != nil {
		t.Errorf("ControllerPublishVolume by id: %v", err)
	} else {
		served["publish"] = true
	}
	if _, err := d.Controller.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: id, NodeId: node}); err != nil {
		t.Errorf("ControllerUnpublishVolume by id: %v", err)
	}
	if _, err := d.Controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: id,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 30}, VolumeCapability: ext4Writer}); err != nil {
		t.Errorf("ControllerExpandVolume by id: %v", err)
	} else {
		served["expand"] = true
	}
	if _, err := d.Controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
		t.Fatalf("DeleteVolume by id: %v", err)
	}
	if vc.FCDExists(t, id) {
		t.Error("the First Class Disk is still there after DeleteVolume")
	} else {
		served["delete"] = true
	}
	// What the plan promises a native vSphere volume is what was served.
	planned := map[string]bool{}
	for _, f := range adopt.VSphereFeatures(adopt.FormNative) {
		planned[string(f)] = true
	}
	if !maps.Equal(planned, served) {
		t.Errorf("the plan promises %v for a native vSphere volume; the driver served %v", planned, served)
	}
}

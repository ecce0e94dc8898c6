package vspheretest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/nodetest"
	"github.com/csimigrate/csimigrate/plugin"
)

// TestVSphereUpgrade130To137 is the journey of the vSphere volumes on one
// cluster: vcsim and the vSphere CSI driver's controller, a Kubernetes
// 1.30.14 control plane and hollow kubelet (vSphere migration is always on
// there), in-tree vSphere PVs of an in-tree class, one used by a running
// pod and one unused. `dump`, `plan`, then `rewrite -apply -online -adopt`
// with the driver's configuration: the PV in use is rewritten under its
// pod with its migration handle (the adoption would change the handle the
// kubelet tracks), the unused one becomes the driver's own volume (its
// First Class Disk ID), the class is replaced. Then the control plane and
// kubelet stop and 1.37.2's start on the same etcd data (skipping 1.31 to
// 1.36, which users must not), the driver running on. Every claim is still
// bound to its PV, the pod that ran runs again, no VolumeAttachment is left
// for a handle no PV has, neither kube-controller-manager nor the kubelets
// log an error about the volumes; a pod on a second node attaches the
// adopted volume by its handle's VolumeAttachment, and the driver
// snapshots and expands it by that handle.
func TestVSphereUpgrade130To137(t *testing.T) {
	vc := StartVCenter(t)
	var logs bytes.Buffer
	srv, err := testenv.StartRelease(&logs, testenv.V1_30)
	if err != nil {
		t.Fatalf("kube-apiserver %s: %v\n%s", testenv.V1_30.Version, err, logs.String())
	}
	t.Cleanup(srv.Stop)
	d := StartDriver(t, srv, vc)
	c := srv.Client
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kc, err := srv.WriteKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	start := func(nodes ...string) {
		t.Helper()
		if err := srv.StartControllerManagerFlags(&logs, []string{"--attach-detach-reconcile-sync-period=10s"},
			append(append([]string(nil), testenv.VolumeControllers...), "persistentvolume-attach-detach-controller")...); err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			root, err := srv.StartHollowNode(&logs, n, "")
			if err != nil {
				t.Fatal(err)
			}
			nodetest.StartNodePlugin(t, root, plugin.VSphereDriverName, n)
		}
	}
	start("node1")
	// external-attacher's part: the driver's VolumeAttachments marked
	// attached (the driver's own ControllerPublishVolume is called below).
	testenv.PlayAttacher(ctx, t, c, plugin.VSphereDriverName)

	const ns = "apps"
	inUsePath := "[LocalDS_0] kubevols/kubernetes-dynamic-pvc-7a1b2c3d-0000-4000-8000-000000000001.vmdk"
	unusedPath := "[LocalDS_0] kubevols/kubernetes-dynamic-pvc-7a1b2c3d-0000-4000-8000-000000000002.vmdk"
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "vsphere-thin"}, Provisioner: plugin.VSphereInTreePluginName,
		Parameters: map[string]string{"storagepolicyname": existingPolicy}}
	if _, err := c.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"vs-inuse": inUsePath, "vs-unused": unusedPath} {
		createInTreePV(t, vc, c, name, path, existingPolicy)
	}
	testenv.RunPod(t, c, ns, "app", "node1", "vs-inuse")

	// docs/upgrade.md's vSphere section, command by command (run records
	// each as the page words it).
	dir := t.TempDir()
	dump, review := filepath.Join(dir, "cluster.json"), filepath.Join(dir, "review.sh")
	conf := confFile(t, vc, vc.Password)
	pvs := []string{"vs-inuse", "vs-unused", "storageclass/" + class.Name}
	ran := map[string]bool{}
	run := func(args ...string) (int, []byte, string) {
		t.Helper()
		words := []string{"csimigrate"}
		for i := 0; i < len(args); i++ {
			switch a := args[i]; {
			case a == "-kubeconfig":
				i++
			case a == dump:
				words = append(words, "cluster.json")
			case a == review:
				words = append(words, "review.sh")
			case a == conf:
				words = append(words, "$VSPHERE_CONF")
			case a == "storageclass/"+class.Name:
				words = append(words, "storageclass/$CLASS")
			case a == "vs-inuse" || a == "vs-unused":
				if words[len(words)-1] != "$PVS" {
					words = append(words, "$PVS")
				}
			default:
				words = append(words, a)
			}
		}
		ran[strings.Join(words, " ")] = true
		return csimigrate(t, args...)
	}
	code, out, stderr := run("dump", "-kubeconfig", kc)
	if code != 0 {
		t.Fatalf("dump: exit %d: %s", code, stderr)
	}
	if err := os.WriteFile(dump, out, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := run("plan", "-f", dump, "-read-vsphere", "-vsphere-conf", conf); code > 1 || !strings.Contains(string(out), "vs-unused") || !strings.Contains(string(out), "KUBERNETES: the API server runs "+testenv.V1_30.Version) {
		t.Fatalf("plan: exit %d: %s\n%s", code, out, stderr)
	}
	args := append([]string{"-online", "-adopt", "-vsphere-conf", conf, "-kubeconfig", kc}, pvs...)
	code, out, stderr = run(append([]string{"rewrite"}, args...)...)
	if code != 0 || !strings.Contains(string(out), "rewrite_pv vs-unused ") {
		t.Fatalf("the review: exit %d\n%s\n%s", code, out, stderr)
	}
	if err := os.WriteFile(review, out, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = run(append([]string{"rewrite", "-apply", "-review", review}, args...)...)
	if code != 0 {
		t.Fatalf("rewrite -apply -review -online -adopt: exit %d\n%s\n%s", code, out, stderr)
	}
	testenv.PageRan(t, "../docs/upgrade.md", "## vSphere", "", ran, 4)
	t.Logf("rewrite -apply on 1.30:\n%s", out)
	inUse, unused := getPV(t, c, "vs-inuse"), getPV(t, c, "vs-unused")
	switch {
	case inUse.Spec.CSI == nil || inUse.Spec.CSI.VolumeHandle != inUsePath:
		t.Fatalf("the PV in use: %+v; want its migration handle, the path", inUse.Spec.PersistentVolumeSource)
	case unused.Spec.CSI == nil || strings.Contains(unused.Spec.CSI.VolumeHandle, ".vmdk") || !vc.FCDExists(t, unused.Spec.CSI.VolumeHandle):
		t.Fatalf("the unused PV: %+v; want a First Class Disk ID", unused.Spec.PersistentVolumeSource)
	}
	testenv.WaitPodRunning(t, c, ns, "app", 30*time.Second)
	testenv.WaitBound(t, c, ns, []string{"vs-inuse", "vs-unused"})

	// The upgrade, on the same etcd; the driver runs on.
	if err := srv.Upgrade(&logs, testenv.V1_37); err != nil {
		t.Fatalf("upgrading to %s: %v\n%s", testenv.V1_37.Version, err, logs.String())
	}
	start("node1", "node2")
	testenv.WaitBound(t, c, ns, []string{"vs-inuse", "vs-unused"})
	testenv.WaitPodRunning(t, c, ns, "app", 90*time.Second)
	testenv.CheckAttachments(t, c)
	for _, log := range []string{"kube-controller-manager", "hollow-node-node1", "hollow-node-node2"} {
		testenv.NoErrorsAbout(t, srv.LogPath(log), "vs-inuse", "vs-unused")
	}

	// The adopted volume through the driver, on 1.37.
	testenv.RunPod(t, c, ns, "app2", "node2", "vs-unused")
	handle := unused.Spec.CSI.VolumeHandle
	va, err := c.StorageV1().VolumeAttachments().Get(ctx, featuregate.AttachmentName(handle, plugin.VSphereDriverName, "node2"), metav1.GetOptions{})
	if err != nil || !va.Status.Attached {
		t.Errorf("no attached VolumeAttachment of the adopted volume's handle on node2: %v", err)
	}
	node := vc.VMUUID(t, "DC0_H0_VM0")
	if _, err := d.Controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: handle, NodeId: node, VolumeCapability: ext4Writer,
		VolumeContext: unused.Spec.CSI.VolumeAttributes}); err != nil {
		t.Errorf("ControllerPublishVolume of the adopted PV on 1.37: %v", err)
	}
	// Expanded first: the driver expands no volume with snapshots.
	if _, err := d.Controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: handle,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 30}, VolumeCapability: ext4Writer}); err != nil {
		t.Errorf("ControllerExpandVolume of the adopted PV on 1.37: %v", err)
	}
	snap, err := d.Controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: handle, Name: "after-upgrade"})
	if err != nil || !snap.Snapshot.ReadyToUse || snap.Snapshot.SourceVolumeId != handle {
		t.Fatalf("CreateSnapshot of the adopted PV on 1.37: %v", err)
	}
	if _, err := d.Controller.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: snap.Snapshot.SnapshotId}); err != nil {
		t.Errorf("DeleteSnapshot: %v", err)
	}
	if t.Failed() {
		t.Logf("kube-controller-manager:\n%s", srv.Logs("kube-controller-manager"))
	}
}

// getPV reads a PV, failing the test when it cannot.
func getPV(t *testing.T, c kubernetes.Interface, name string) *v1.PersistentVolume {
	t.Helper()
	pv, err := c.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pv
}

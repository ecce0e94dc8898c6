package nodetest_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/nodetest"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/translate"
	"github.com/google/go-cmp/cmp"
)

// attachmentOf returns the VolumeAttachment of driver and handle on node,
// nil when there is none.
func attachmentOf(t *testing.T, c kubernetes.Interface, driver, handle, node string) *storagev1.VolumeAttachment {
	t.Helper()
	va, err := c.StorageV1().VolumeAttachments().Get(context.Background(), featuregate.AttachmentName(handle, driver, node), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return va
}

// periodicLoop is the longest period of the loops that could notice a PV
// replaced under a running pod: the hollow kubelet's pod sync (kubemark sets
// SyncFrequency to 10 s) and, as the test starts it, the attach/detach
// controller's reconcile sync.
const periodicLoop = 10 * time.Second

// onlineCase is a plugin and the release whose kubelet migrates it.
type onlineCase struct {
	release                testenv.Release
	kcmGates, kubeletGates string
	driver, inTree         string
	source                 func(ns string) v1.PersistentVolumeSource
	// unmigratedNode: start a second node whose kubelet does not migrate
	// the plugin, and check that -online refuses a PV in use there.
	unmigratedNode bool
}

// TestOnlineRewriteWithKubelet proves the writer with Options.Online (what
// rewrite -apply -online runs) with
// Kubernetes' own kubelet (kubemark's hollow kubelet: the real volume
// manager and CSI volume plugin with csi-translation-lib's migration, over a
// fake runtime and mounter) and kube-controller-manager's attach/detach
// controller: vSphere on 1.37.2 (every 1.37 component migrates it), RBD on
// 1.30.14 with CSIMigrationRBD (the last release with the plugin). A pod runs
// on an in-tree PV through the driver; without -online the rewrite refuses
// it and changes nothing; with -online the PV is replaced under the running
// pod and for 30 s after that the driver receives no unpublish, unstage or
// second stage/publish, the VolumeAttachment keeps its uid, the node's
// volumesInUse and volumesAttached keep the same name, the pod stays Running
// and its claim Bound (30 s is three rounds of every periodic loop that could
// act on the change: the hollow kubelet syncs each pod every 10 s, kubemark's
// SyncFrequency, and the attach/detach controller runs here with a 10 s
// reconcile sync period instead of its 1 min default); deleting the pod unpublishes and unstages with the
// ids and paths it was published with and detaches; a new pod stages and
// publishes the rewritten PV with the same handle. The undo goes the same
// way back: refused without -online; with it, the in-tree PV as stored
// before the rewrite replaces the CSI PV under the running pod, again with
// no driver call and the same VolumeAttachment and node volume names for
// 30 s, and a second online rewrite likewise. A pod not yet scheduled,
// and (RBD) a pod on a node whose kubelet does not migrate the plugin, are
// refused and left as they were. The two releases run side by side: each
// has servers of its own, and most of the time is the windows' waiting.
func TestOnlineRewriteWithKubelet(t *testing.T) {
	t.Run("vSphere on 1.37", func(t *testing.T) {
		t.Parallel()
		onlineRewriteWithKubelet(t, onlineCase{release: testenv.V1_37, driver: plugin.VSphereDriverName, inTree: plugin.VSphereInTreePluginName,
			source: func(ns string) v1.PersistentVolumeSource {
				return v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[vsanDatastore] kubevols/" + ns + ".vmdk", FSType: "ext4"}}
			}})
	})
	t.Run("RBD on 1.30", func(t *testing.T) {
		t.Parallel()
		onlineRewriteWithKubelet(t, onlineCase{release: testenv.V1_30, kcmGates: "CSIMigrationRBD=true", kubeletGates: "CSIMigrationRBD=true",
			driver: plugin.RBDDriverName, inTree: plugin.RBDInTreePluginName, unmigratedNode: true,
			source: func(ns string) v1.PersistentVolumeSource { return testenv.RBDSource(ns, ns) }})
	})
}

func onlineRewriteWithKubelet(t *testing.T, tc onlineCase) {
	s, err := testenv.StartRelease(os.Stderr, tc.release)
	if err != nil {
		t.Fatalf("cannot start kube-apiserver %s: %v", tc.release.Version, err)
	}
	t.Cleanup(s.Stop)
	flags := []string{"--attach-detach-reconcile-sync-period=" + periodicLoop.String()}
	if tc.kcmGates != "" {
		flags = append(flags, "--feature-gates="+tc.kcmGates)
	}
	if err := s.StartControllerManagerFlags(os.Stderr, flags, append(slices.Clone(testenv.VolumeControllers), "persistentvolume-attach-detach-controller")...); err != nil {
		t.Fatalf("cannot start kube-controller-manager: %v", err)
	}
	c := s.Client
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const node = "node1"
	driver := tc.driver
	root, err := s.StartHollowNode(os.Stderr, node, tc.kubeletGates)
	if err != nil {
		t.Fatalf("cannot start the hollow kubelet: %v", err)
	}
	// The server's CSIDriver of the name, with the spec this driver has.
	if err := s.RemoveCSIDrivers(driver); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driver},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr(true), PodInfoOnMount: ptr(false)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := nodetest.StartNodePlugin(t, root, driver, node)
	testenv.PlayAttacher(ctx, t, c, driver)

	const ns = "online"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No service-account controller runs: the account pods need; and the
	// Ceph secret the kubelet passes to NodeStage.
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Secrets(ns).Create(ctx, testenv.CephSecret(ns, "ceph", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const pvName = "online-pv"
	pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, testenv.ClaimFor(ns, "data", pvName), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv := testenv.BoundPV(pvName, ns, "data", pvc.UID, tc.source("online"))
	testenv.EnsureSecrets(t, c, pv)
	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitBound(t, c, ns, []string{pvName})
	stored := getPV(t, c, pvName)
	// The handle csi-translation-lib computes (compat/ proves csimigrate's
	// equal to v0.30.14's and v0.37's).
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	translated, err := tr.TranslateInTreePVToCSI(klog.Background().V(100), pv)
	if err != nil {
		t.Fatal(err)
	}
	handle := translated.Spec.CSI.VolumeHandle

	// 1. The pod runs on the in-tree PV through the driver.
	if _, err := c.CoreV1().Pods(ns).Create(ctx, testenv.PodOn(ns, "app", node, "data"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitPodRunning(t, c, ns, "app", 90*time.Second)
	calls := d.WaitCalls(t, 0, 30*time.Second, "NodeStageVolume", "NodePublishVolume")
	var stage, publish nodetest.CSICall
	for _, call := range calls {
		if call.VolumeID != handle {
			t.Fatalf("the driver got volume ID %q, want the handle csi-translation-lib computes, %q", call.VolumeID, handle)
		}
		switch call.Method {
		case "NodeStageVolume":
			stage = call
		case "NodePublishVolume":
			publish = call
		}
	}
	va := attachmentOf(t, c, driver, handle, node)
	if va == nil || !va.Status.Attached {
		t.Fatalf("no attached VolumeAttachment for %s on %s: %+v", handle, node, va)
	}
	csiNode, err := c.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil || !strings.Contains(csiNode.Annotations[featuregate.AnnMigratedPlugins], tc.inTree) {
		t.Fatalf("CSINode %s does not list %s as migrated: %v %v", node, tc.inTree, err, csiNode)
	}
	wantInUse := v1.UniqueVolumeName("kubernetes.io/csi/" + driver + "^" + handle)
	if nd, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); err != nil || !slices.Contains(nd.Status.VolumesInUse, wantInUse) {
		t.Fatalf("node %s volumesInUse %v (%v), want %s", node, nd.Status.VolumesInUse, err, wantInUse)
	}

	// 5. Without -online the PV in use is refused and left as it was.
	before := getPV(t, c, pvName)
	if _, out, err := rewritePVs(t, c, apply.Options{}, []string{pvName}); err == nil || !strings.Contains(out, "refused, left as it was") {
		t.Fatalf("without -online: %v\n%s", err, out)
	}
	unchanged(t, c, before)

	// 2. With -online it is rewritten under the running pod.
	n := d.Count()
	if _, out, err := rewritePVs(t, c, apply.Options{Online: true}, []string{pvName}); err != nil {
		t.Fatalf("online rewrite: %v\n%s", err, out)
	}
	if after := getPV(t, c, pvName); after.Spec.CSI == nil || after.Spec.CSI.VolumeHandle != handle {
		t.Fatalf("after the rewrite: %+v", after.Spec.PersistentVolumeSource)
	}
	// watch fails if, from mark on and for dur, the driver is called, the
	// VolumeAttachment changes, the pod stops or the node's volume names
	// change.
	watch := func(mark int, dur time.Duration, what string) {
		t.Helper()
		watchUntil := time.Now().Add(dur)
		for time.Now().Before(watchUntil) {
			if got := d.Since(mark); len(got) > 0 {
				t.Fatalf("the driver received %v during or after %s", got, what)
			}
			now := attachmentOf(t, c, driver, handle, node)
			if now == nil || now.UID != va.UID || !now.Status.Attached {
				t.Fatalf("VolumeAttachment changed by %s: was uid %s, now %+v", what, va.UID, now)
			}
			p, err := c.CoreV1().Pods(ns).Get(ctx, "app", metav1.GetOptions{})
			if err != nil || p.Status.Phase != v1.PodRunning || p.DeletionTimestamp != nil {
				t.Fatalf("the pod is no longer running after %s: %v %+v", what, err, p.Status)
			}
			nd, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil || !slices.Contains(nd.Status.VolumesInUse, wantInUse) || !slices.ContainsFunc(nd.Status.VolumesAttached, func(a v1.AttachedVolume) bool { return a.Name == wantInUse }) {
				t.Fatalf("node %s after %s: volumesInUse %v, volumesAttached %v; want %s in both", node, what, nd.Status.VolumesInUse, nd.Status.VolumesAttached, wantInUse)
			}
			time.Sleep(time.Second)
		}
	}
	watch(n, 3*periodicLoop, "the rewrite")
	testenv.WaitBound(t, c, ns, []string{pvName})

	// 6. The undo takes the same way back under the running pod: refused
	// without -online; with it, the in-tree PV as it was stored replaces the
	// CSI PV and neither the kubelet nor the attach/detach controller sees a
	// change. Then the rewrite again, for what follows.
	rewritten := getPV(t, c, pvName)
	if _, out, err := rewritePVs(t, c, apply.Options{Direction: apply.Undo}, []string{pvName}); err == nil || !strings.Contains(out, "in use by pods app") {
		t.Fatalf("undo without -online: %v\n%s", err, out)
	}
	unchanged(t, c, rewritten)
	n = d.Count()
	if _, out, err := rewritePVs(t, c, apply.Options{Direction: apply.Undo, Online: true}, []string{pvName}); err != nil {
		t.Fatalf("online undo: %v\n%s", err, out)
	}
	if diff := cmp.Diff(testenv.FieldsOf(stored), testenv.FieldsOf(getPV(t, c, pvName))); diff != "" {
		t.Errorf("after the online undo (-before the rewrite +after the undo):\n%s", diff)
	}
	watch(n, 3*periodicLoop, "the undo")
	testenv.WaitBound(t, c, ns, []string{pvName})
	n = d.Count()
	if _, out, err := rewritePVs(t, c, apply.Options{Online: true}, []string{pvName}); err != nil {
		t.Fatalf("online rewrite after the undo: %v\n%s", err, out)
	}
	watch(n, 3*periodicLoop, "the second rewrite")
	testenv.WaitBound(t, c, ns, []string{pvName})

	// 3. Deleting the pod unpublishes and unstages as published, and the
	// attach/detach controller detaches.
	n = d.Count()
	if err := c.CoreV1().Pods(ns).Delete(ctx, "app", metav1.DeleteOptions{GracePeriodSeconds: ptr[int64](0)}); err != nil {
		t.Fatal(err)
	}
	for _, call := range d.WaitCalls(t, n, 90*time.Second, "NodeUnpublishVolume", "NodeUnstageVolume") {
		switch {
		case call.VolumeID != handle:
			t.Errorf("%v: volume ID, want %q", call, handle)
		case call.Method == "NodeUnpublishVolume" && call.Target != publish.Target:
			t.Errorf("%v: target, published at %s", call, publish.Target)
		case call.Method == "NodeUnstageVolume" && call.Staging != stage.Staging:
			t.Errorf("%v: staging path, staged at %s", call, stage.Staging)
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for attachmentOf(t, c, driver, handle, node) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the VolumeAttachment is still there 90 s after the pod was deleted")
		}
		time.Sleep(500 * time.Millisecond)
	}
	// A new pod stages and publishes the rewritten PV with the same handle.
	n = d.Count()
	if _, err := c.CoreV1().Pods(ns).Create(ctx, testenv.PodOn(ns, "app2", node, "data"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitPodRunning(t, c, ns, "app2", 90*time.Second)
	for _, call := range d.WaitCalls(t, n, 30*time.Second, "NodeStageVolume", "NodePublishVolume") {
		if call.VolumeID != handle {
			t.Errorf("%v: volume ID, want %q", call, handle)
		}
	}

	// 4. Refusals with a real kubelet: a pod not yet scheduled, and a pod
	// on a node whose kubelet does not migrate the plugin.
	refusedInUse := func(pvName, podName, podNode string) {
		t.Helper()
		pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, testenv.ClaimFor(ns, podName, pvName), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pv := testenv.BoundPV(pvName, ns, podName, pvc.UID, tc.source(pvName))
		testenv.EnsureSecrets(t, c, pv)
		if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		testenv.WaitBound(t, c, ns, []string{pvName})
		if _, err := c.CoreV1().Pods(ns).Create(ctx, testenv.PodOn(ns, podName, podNode, podName), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		before := getPV(t, c, pvName)
		pod, err := c.CoreV1().Pods(ns).Get(ctx, podName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, out, err := rewritePVs(t, c, apply.Options{Online: true}, []string{pvName}); err == nil || !strings.Contains(out, "refused") {
			t.Errorf("pod %s on %q: %v\n%s", podName, podNode, err, out)
		}
		unchanged(t, c, before)
		if now, err := c.CoreV1().Pods(ns).Get(ctx, podName, metav1.GetOptions{}); err != nil || now.UID != pod.UID || now.DeletionTimestamp != nil {
			t.Errorf("pod %s was touched: %v", podName, err)
		}
	}
	refusedInUse("online-unscheduled", "unscheduled", "")
	if tc.unmigratedNode {
		if _, err := s.StartHollowNode(os.Stderr, "node2", ""); err != nil {
			t.Fatalf("cannot start the second hollow kubelet: %v", err)
		}
		if cn, err := c.StorageV1().CSINodes().Get(ctx, "node2", metav1.GetOptions{}); err == nil && strings.Contains(cn.Annotations[featuregate.AnnMigratedPlugins], tc.inTree) {
			t.Fatalf("node2 migrates %s without the gate: %v", tc.inTree, cn.Annotations)
		}
		refusedInUse("online-unmigrated", "unmigrated", "node2")
	}
}

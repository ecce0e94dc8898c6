package main

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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/plugins"
	"github.com/csimigrate/csimigrate/testenv"
)

// playAttacher plays external-attacher for driver until ctx ends: every
// VolumeAttachment of the driver is marked attached.
func playAttacher(ctx context.Context, t *testing.T, c kubernetes.Interface, driver string) {
	go func() {
		for ctx.Err() == nil {
			list, err := c.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
			if err == nil {
				for _, va := range list.Items {
					if va.Spec.Attacher == driver && !va.Status.Attached && va.DeletionTimestamp == nil {
						va.Status.Attached = true
						if _, err := c.StorageV1().VolumeAttachments().UpdateStatus(ctx, &va, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) {
							t.Logf("marking %s attached: %v", va.Name, err)
						}
					}
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
}

// podOn is a pod on node (nodeName set: no scheduler runs) using claim.
func podOn(ns, name, node, claim string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.PodSpec{NodeName: node, AutomountServiceAccountToken: ptr(false),
			Containers: []v1.Container{{Name: "app", Image: "registry.example/app:1", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes:    []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}}
}

func waitPodRunning(t *testing.T, c kubernetes.Interface, ns, name string, d time.Duration) *v1.Pod {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		p, err := c.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == v1.PodRunning {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s/%s not Running after %s: %v %+v", ns, name, d, err, p.Status)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

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

// TestOnlineRewriteWithKubelet proves rewrite -apply -online with
// Kubernetes' own kubelet (kubemark's hollow node: the real volume manager
// and CSI volume plugin with csi-translation-lib's migration, over a fake
// runtime and mounter) and kube-controller-manager's attach/detach
// controller, v1.36.3, for vSphere (migrated by every 1.36 component): a pod
// runs on an in-tree PV through the driver; without -online the rewrite
// refuses it and changes nothing; with -online the PV is replaced under the
// running pod and for 60 s after that the driver receives no unpublish,
// unstage or second stage/publish, the VolumeAttachment keeps its uid, the
// node's volumesInUse and volumesAttached keep the same name, the pod stays
// Running and its claim Bound; deleting the pod unpublishes and unstages
// with the ids and paths it was published with and detaches; a new pod
// stages and publishes the rewritten PV with the same handle.
func TestOnlineRewriteWithKubelet(t *testing.T) {
	s, err := testenv.Start(os.Stderr)
	if err != nil {
		t.Fatalf("cannot start kube-apiserver: %v", err)
	}
	t.Cleanup(s.Stop)
	if err := s.StartControllerManager(os.Stderr, append(slices.Clone(testenv.VolumeControllers), "persistentvolume-attach-detach-controller")...); err != nil {
		t.Fatalf("cannot start kube-controller-manager: %v", err)
	}
	c := s.Client
	kc, err := s.WriteKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const node, driver = "node1", plugins.VSphereDriverName
	root, err := s.StartHollowNode(os.Stderr, node, "")
	if err != nil {
		t.Fatalf("cannot start the hollow kubelet: %v", err)
	}
	if _, err := c.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driver},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr(true), PodInfoOnMount: ptr(false)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := startRecordingDriver(t, root, driver, node)
	playAttacher(ctx, t, c, driver)

	const ns = "online"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No service-account controller runs: the account pods need.
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const pvName, path = "online-vsphere", "[vsanDatastore] kubevols/online.vmdk"
	pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claimFor(ns, "data", pvName), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv := boundPV(pvName, ns, "data", pvc.UID, v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: path, FSType: "ext4"}})
	pv.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}
	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBound(t, c, ns, []string{pvName})

	// 1. The pod runs on the in-tree PV through the driver.
	if _, err := c.CoreV1().Pods(ns).Create(ctx, podOn(ns, "app", node, "data"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodRunning(t, c, ns, "app", 90*time.Second)
	calls := d.waitCalls(t, 0, 30*time.Second, "NodeStageVolume", "NodePublishVolume")
	var stage, publish csiCall
	for _, call := range calls {
		if call.VolumeID != path {
			t.Fatalf("the driver got volume ID %q, want the handle csi-translation-lib computes, %q", call.VolumeID, path)
		}
		switch call.Method {
		case "NodeStageVolume":
			stage = call
		case "NodePublishVolume":
			publish = call
		}
	}
	va := attachmentOf(t, c, driver, path, node)
	if va == nil || !va.Status.Attached {
		t.Fatalf("no attached VolumeAttachment for %s on %s: %+v", path, node, va)
	}
	csiNode, err := c.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil || !strings.Contains(csiNode.Annotations[featuregate.AnnMigratedPlugins], plugins.VSphereInTreePluginName) {
		t.Fatalf("CSINode %s does not list %s as migrated: %v %v", node, plugins.VSphereInTreePluginName, err, csiNode)
	}
	nodeBefore, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantInUse := v1.UniqueVolumeName("kubernetes.io/csi/" + driver + "^" + path)
	if !slices.Contains(nodeBefore.Status.VolumesInUse, wantInUse) {
		t.Fatalf("node %s volumesInUse %v, want %s", node, nodeBefore.Status.VolumesInUse, wantInUse)
	}

	// 5. Without -online the PV in use is refused and left as it was.
	before := getPV(t, c, pvName)
	out, _, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc, pvName)
	if code != exitBlocked || !strings.Contains(out, "refused, left as it was") {
		t.Fatalf("without -online: exit %d\n%s", code, out)
	}
	unchanged(t, c, before)

	// 2. With -online it is rewritten under the running pod.
	n := d.count()
	out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-online", "-kubeconfig", kc, pvName)
	if code != exitOK {
		t.Fatalf("rewrite -apply -online: exit %d: %s\n%s", code, stderr, out)
	}
	if after := getPV(t, c, pvName); after.Spec.CSI == nil || after.Spec.CSI.VolumeHandle != path {
		t.Fatalf("after the rewrite: %+v", after.Spec.PersistentVolumeSource)
	}
	watchUntil := time.Now().Add(60 * time.Second)
	for time.Now().Before(watchUntil) {
		if got := d.since(n); len(got) > 0 {
			t.Fatalf("the driver received %v during or after the rewrite", got)
		}
		now := attachmentOf(t, c, driver, path, node)
		if now == nil || now.UID != va.UID || !now.Status.Attached {
			t.Fatalf("VolumeAttachment changed: was uid %s, now %+v", va.UID, now)
		}
		p, err := c.CoreV1().Pods(ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil || p.Status.Phase != v1.PodRunning || p.DeletionTimestamp != nil {
			t.Fatalf("the pod is no longer running: %v %+v", err, p.Status)
		}
		nd, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil || !slices.Contains(nd.Status.VolumesInUse, wantInUse) || !slices.ContainsFunc(nd.Status.VolumesAttached, func(a v1.AttachedVolume) bool { return a.Name == wantInUse }) {
			t.Fatalf("node %s: volumesInUse %v, volumesAttached %v; want %s in both", node, nd.Status.VolumesInUse, nd.Status.VolumesAttached, wantInUse)
		}
		time.Sleep(time.Second)
	}
	waitBound(t, c, ns, []string{pvName})

	// 3. Deleting the pod unpublishes and unstages as published, and the
	// attach/detach controller detaches.
	n = d.count()
	if err := c.CoreV1().Pods(ns).Delete(ctx, "app", metav1.DeleteOptions{GracePeriodSeconds: ptr[int64](0)}); err != nil {
		t.Fatal(err)
	}
	for _, call := range d.waitCalls(t, n, 90*time.Second, "NodeUnpublishVolume", "NodeUnstageVolume") {
		switch {
		case call.VolumeID != path:
			t.Errorf("%v: volume ID, want %q", call, path)
		case call.Method == "NodeUnpublishVolume" && call.Target != publish.Target:
			t.Errorf("%v: target, published at %s", call, publish.Target)
		case call.Method == "NodeUnstageVolume" && call.Staging != stage.Staging:
			t.Errorf("%v: staging path, staged at %s", call, stage.Staging)
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for attachmentOf(t, c, driver, path, node) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the VolumeAttachment is still there 90 s after the pod was deleted")
		}
		time.Sleep(500 * time.Millisecond)
	}
	// A new pod stages and publishes the rewritten PV with the same handle.
	n = d.count()
	if _, err := c.CoreV1().Pods(ns).Create(ctx, podOn(ns, "app2", node, "data"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodRunning(t, c, ns, "app2", 90*time.Second)
	for _, call := range d.waitCalls(t, n, 30*time.Second, "NodeStageVolume", "NodePublishVolume") {
		if call.VolumeID != path {
			t.Errorf("%v: volume ID, want %q", call, path)
		}
	}

	// 4. A pod not yet scheduled is refused.
	pvc2, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claimFor(ns, "pending", "online-pending"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv2 := boundPV("online-pending", ns, "pending", types.UID(pvc2.UID), v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[vsanDatastore] kubevols/pending.vmdk"}})
	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv2, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBound(t, c, ns, []string{"online-pending"})
	if _, err := c.CoreV1().Pods(ns).Create(ctx, podOn(ns, "unscheduled", "", "pending"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before = getPV(t, c, "online-pending")
	if out, _, code := runCmd(t, "", "rewrite", "-apply", "-online", "-kubeconfig", kc, "online-pending"); code != exitBlocked || !strings.Contains(out, "refused") {
		t.Errorf("a pod not yet scheduled: exit %d\n%s", code, out)
	}
	unchanged(t, c, before)
}

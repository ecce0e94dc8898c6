package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// The PV informer's transform keeps whole every PV a direction may act on
// and gives every other one a stub that reads back as apply.SlimPV gives
// that PV, without the volume's handle and attributes, and keeps the hash
// of the same volume key (rewrite.VolumeKey), without changing its input;
// what the stub reads back as is no PV a direction acts on either. PVs of every kind: in-tree, their translations (migration
// handles), provisioned CSI PVs of Ceph CSI and vSphere, and hostile ones.
func TestTrimPVStubIsSlimPV(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	stubs := 0
	rapid.Check(t, func(t *rapid.T) {
		pv := gen.AnyPV(t, func(in *v1.PersistentVolume) (*v1.PersistentVolume, error) {
			return tr.TranslateInTreePVToCSI(klog.Background().V(100), in)
		})
		// What an informer's PV has beside: identity, phase, labels, a
		// deletion under way.
		pv.UID = drawUID(t, "uid")
		pv.ResourceVersion = drawRV(t, "rv")
		if pv.Spec.ClaimRef != nil {
			pv.Spec.ClaimRef.UID = drawUID(t, "claimUID")
		}
		pv.Status.Phase = rapid.SampledFrom([]v1.PersistentVolumePhase{"", v1.VolumeBound, v1.VolumeAvailable, v1.VolumeReleased, v1.VolumeFailed}).Draw(t, "phase")
		if rapid.Bool().Draw(t, "labelled") {
			pv.Labels = map[string]string{"team": rapid.StringMatching(`[a-z]{1,8}`).Draw(t, "team")}
		}
		if rapid.Bool().Draw(t, "deleting") {
			pv.DeletionTimestamp = &metav1.Time{}
		}
		before := pv.DeepCopy()
		got, err := trimPV(pv)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, pv); diff != "" {
			t.Fatalf("trimPV changed its input:\n%s", diff)
		}
		if apply.KeptWhole(pv) {
			if got != any(pv) {
				t.Fatalf("a PV a direction may act on was not kept whole: %T", got)
			}
			return
		}
		stubs++
		s, ok := got.(*pvStub)
		if !ok {
			t.Fatalf("a PV no direction acts on was kept as %T", got)
		}
		slim := apply.SlimPV(pv)
		key, keyed := rewrite.VolumeKey(slim)
		slim.Spec.CSI.VolumeHandle, slim.Spec.CSI.VolumeAttributes = "", nil
		if diff := cmp.Diff(slim, s.pv()); diff != "" {
			t.Fatalf("the stub reads back (+) otherwise than SlimPV gives the PV without its volume's handle and attributes (-):\n%s", diff)
		}
		if s.keyed != keyed || keyed && s.key != volumeKeyHash(key) {
			t.Fatalf("stub's volume key hash %x (keyed %t), the PV's key %q (keyed %t)", s.key, s.keyed, key, keyed)
		}
		// No direction acts on what the stub reads back as either.
		if apply.KeptWhole(s.pv()) {
			t.Fatalf("the stub reads back as a PV a direction may act on: %+v", s.pv())
		}
		if s.GetName() != pv.Name || s.GetResourceVersion() != pv.ResourceVersion || s.GetUID() != pv.UID {
			t.Fatalf("stub's identity %q %q %q, the PV's %q %q %q", s.GetName(), s.GetResourceVersion(), s.GetUID(), pv.Name, pv.ResourceVersion, pv.UID)
		}
	})
	t.Logf("%d stubs", stubs)
	if stubs == 0 {
		t.Error("no generated PV was held as a stub")
	}
}

// drawUID is a uid as the API server gives it (a UUID) or any other.
func drawUID(t *rapid.T, label string) types.UID {
	return types.UID(rapid.OneOf(rapid.StringMatching(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`),
		rapid.StringMatching(`[a-fA-F0-9-]{0,37}`)).Draw(t, label))
}

// drawRV is a resourceVersion as kube-apiserver gives it (a decimal) or
// any other.
func drawRV(t *rapid.T, label string) string {
	return rapid.OneOf(rapid.StringMatching(`[1-9][0-9]{0,19}`), rapid.StringMatching(`[0-9a-z]{0,21}`)).Draw(t, label)
}

// A stub's identity reads back as the object's, whatever its uid and
// resourceVersion: packed where they are a UUID and a decimal, kept as
// they are otherwise. Its copy is its own.
func TestStubMetaReadsBack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := metav1.ObjectMeta{Namespace: rapid.SampledFrom([]string{"", "ns"}).Draw(t, "ns"), Name: "n", UID: drawUID(t, "uid"), ResourceVersion: drawRV(t, "rv")}
		if rapid.Bool().Draw(t, "deleting") {
			m.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		}
		s := metaOf(&m)
		got := metav1.ObjectMeta{Namespace: s.GetNamespace(), Name: s.GetName(), UID: s.GetUID(), ResourceVersion: s.GetResourceVersion(), DeletionTimestamp: s.GetDeletionTimestamp()}
		if diff := cmp.Diff(m, got); diff != "" {
			t.Fatalf("the stub's identity (+) is not the object's (-):\n%s", diff)
		}
		cp := s.deepCopy()
		if m.DeletionTimestamp != nil && cp.deletion() == s.deletion() {
			t.Fatal("the copy shares its deletion time with the stub")
		}
	})
	// The usual forms are packed, with nothing extra kept.
	for _, m := range []metav1.ObjectMeta{{UID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", ResourceVersion: "18446744073709551615"}, {UID: "00000000-0000-0000-0000-000000000000", ResourceVersion: "0"}} {
		if s := metaOf(&m); s.extra != nil {
			t.Errorf("uid %q, resourceVersion %q: kept %+v beside the packed fields", m.UID, m.ResourceVersion, *s.extra)
		}
	}
	// Others are kept as they are.
	for _, m := range []metav1.ObjectMeta{{UID: "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0", ResourceVersion: "01"}, {UID: "u", ResourceVersion: "18446744073709551616"}, {}} {
		s := metaOf(&m)
		if s.extra == nil || !s.extra.rawUID || !s.extra.rawRV || s.GetUID() != m.UID || s.GetResourceVersion() != m.ResourceVersion {
			t.Errorf("uid %q, resourceVersion %q: read back as %q, %q", m.UID, m.ResourceVersion, s.GetUID(), s.GetResourceVersion())
		}
	}
}

// A pod is kept as the claims it names (rewrite.PodClaims), its node and
// phase, and nothing of its other volumes.
func TestPodUseKeepsItsClaims(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0", UID: "u", ResourceVersion: "7", Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{NodeName: "n1", Volumes: []v1.Volume{
			{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}},
			{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-0"}}},
			{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{}}}},
		}},
		Status: v1.PodStatus{Phase: v1.PodRunning}}
	before := pod.DeepCopy()
	c := &Controller{}
	obj, err := c.trimUser(pod)
	if err != nil {
		t.Fatal(err)
	}
	u := obj.(*podUse)
	if diff := cmp.Diff([]string{"data-web-0", "web-0-scratch"}, u.claims); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	want := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0", UID: "u", ResourceVersion: "7"}, Spec: v1.PodSpec{NodeName: "n1"}, Status: v1.PodStatus{Phase: v1.PodRunning}}
	if diff := cmp.Diff(want, u.pod()); diff != "" {
		t.Errorf("the pod the in-use check reads (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, pod); diff != "" {
		t.Errorf("the informer's pod was changed:\n%s", diff)
	}
}

// The stores as the writer and the controller read them: a claim is kept
// whole (trimmed) when its PV is kept whole or it is not bound, as a stub
// otherwise; the claims lister does not find a stub (the writer then reads
// the API server); the PV lister gives a stub as SlimPV, lists only whole
// PVs; pods are found by their claims; the volumes of stubs are named.
func TestStores(t *testing.T) {
	inTree := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "in-tree", ResourceVersion: "1"},
		Spec: v1.PersistentVolumeSpec{ClaimRef: &v1.ObjectReference{Namespace: "ns", Name: "old"}, PersistentVolumeSource: v1.PersistentVolumeSource{
			RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{"10.0.0.1:6789"}, RBDPool: "kube", RBDImage: "img"}}}}
	native := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "native", ResourceVersion: "2", Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": plugin.RBDDriverName}},
		Spec: v1.PersistentVolumeSpec{StorageClassName: "rbd", ClaimRef: &v1.ObjectReference{Namespace: "ns", Name: "new"},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: plugin.RBDDriverName,
				VolumeHandle:     "0001-0024-b7f67366-bb43-f32e-07d8-a261a7840da9-0000000000000002-6f1c0000-4b53-9a61-2b0c-1d9a7e110000",
				VolumeAttributes: map[string]string{"clusterID": "c", "pool": "kube", "imageName": "img", "storage.kubernetes.io/csiProvisionerIdentity": "x"}}}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound}}
	c := &Controller{}
	c.pvStore = cache.NewStore(cache.MetaNamespaceKeyFunc)
	c.claimStore = cache.NewStore(cache.MetaNamespaceKeyFunc)
	c.podIndex = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{claimIndex: podClaimKeys})
	c.pvs, c.claims = pvLister{c.pvStore}, claimLister{c.claimStore}
	for _, pv := range []*v1.PersistentVolume{inTree, native} {
		obj, _ := trimPV(pv)
		if err := c.pvStore.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(name, volume string) *v1.PersistentVolumeClaim {
		return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			Annotations: map[string]string{v1.LastAppliedConfigAnnotation: "{}", "team": "db"}}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: volume}}
	}
	for _, pvc := range []*v1.PersistentVolumeClaim{claim("old", "in-tree"), claim("new", "native"), claim("pending", ""), claim("elsewhere", "unknown")} {
		obj, _ := c.trimUser(pvc)
		if err := c.claimStore.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"old", "pending"} {
		got, err := c.claims.PersistentVolumeClaims("ns").Get(name)
		if err != nil {
			t.Fatalf("claim %s: %v", name, err)
		}
		if _, ok := got.Annotations[v1.LastAppliedConfigAnnotation]; ok || got.Annotations["team"] != "db" {
			t.Errorf("claim %s annotations %v: want the last-applied copy gone, the rest kept", name, got.Annotations)
		}
	}
	for _, name := range []string{"new", "elsewhere"} {
		if _, err := c.claims.PersistentVolumeClaims("ns").Get(name); !apierrors.IsNotFound(err) {
			t.Errorf("claim %s (a stub): got %v, want not found", name, err)
		}
		if uid, volume, _, ok := c.binding("ns", name); !ok || string(uid) != "uid-"+name {
			t.Errorf("binding of stub %s: %q %q %v", name, uid, volume, ok)
		}
	}
	native2 := native.DeepCopy()
	native2.Spec.ClaimRef.UID, native2.Status.Phase = "uid-new", v1.VolumeAvailable
	if !c.bindingInFlight(native2) {
		t.Error("a PV whose claim (a stub) names it by uid, not yet Bound: want in flight")
	}
	native2.Spec.ClaimRef.UID = "uid-other"
	if c.bindingInFlight(native2) {
		t.Error("a PV whose claim has another uid: want not in flight")
	}
	got, err := c.pvs.Get("native")
	if err != nil {
		t.Fatal(err)
	}
	slim := apply.SlimPV(native)
	slim.Spec.CSI.VolumeHandle, slim.Spec.CSI.VolumeAttributes = "", nil
	if diff := cmp.Diff(slim, got); diff != "" {
		t.Errorf("the stub as the PV lister gives it (-SlimPV without the volume's handle and attributes +got):\n%s", diff)
	}
	if _, err := c.pvs.Get("gone"); !apierrors.IsNotFound(err) {
		t.Errorf("a PV not held: got %v, want not found", err)
	}
	list, _ := c.pvs.List(labels.Everything())
	if len(list) != 1 || list[0] != inTree {
		t.Errorf("List: %v, want the in-tree PV only", list)
	}
	key, _ := rewrite.VolumeKey(native)
	inTreeKey, _ := rewrite.VolumeKey(inTree)
	for k, want := range map[string][]string{key: {"native"}, inTreeKey: {"in-tree"}, "none": nil} {
		names, _ := c.pvsNaming(k)
		slices.Sort(names)
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("PVs naming %q (-want +got):\n%s", k, diff)
		}
	}
	for _, p := range []*v1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Spec: v1.PodSpec{NodeName: "n1", Volumes: []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "old"}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "b"}, Spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "old"}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}},
	} {
		obj, _ := c.trimUser(p)
		if err := c.podIndex.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	pods, _ := c.podsUsing("ns", "old")
	if len(pods) != 1 || pods[0].Name != "a" || pods[0].Spec.NodeName != "n1" {
		t.Errorf("pods using ns/old: %+v, want pod a on n1", pods)
	}
}

// A VolumeAttachment keeps what the online-safety check reads (its name,
// attacher, node, PV) and its state; its input is not changed.
func TestTrimAttachment(t *testing.T) {
	pvName := "pv-1"
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-0123", UID: "u", ResourceVersion: "9",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "csi-attacher"}}, Finalizers: []string{"external-attacher/rbd-csi-ceph-com"}},
		Spec:   storagev1.VolumeAttachmentSpec{Attacher: plugin.RBDDriverName, NodeName: "n1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName}},
		Status: storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"k": "v"}}}
	before := va.DeepCopy()
	got, err := trimPV(va)
	if err != nil {
		t.Fatal(err)
	}
	want := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-0123", UID: "u", ResourceVersion: "9"},
		Spec:   storagev1.VolumeAttachmentSpec{Attacher: plugin.RBDDriverName, NodeName: "n1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName}},
		Status: storagev1.VolumeAttachmentStatus{Attached: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trimmed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, va); diff != "" {
		t.Errorf("the input changed:\n%s", diff)
	}
}

// A stub's event queues its PV only when the controller has business with
// it (a run, a write of its own, a reason to clear); a whole PV's always.
func TestEnqueueStubOnlyWhenTracked(t *testing.T) {
	c := &Controller{}
	c.pvQueue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer c.pvQueue.ShutDown()
	c.blocked, c.said, c.started, c.runs = map[rewrite.ObjectRef]string{}, map[rewrite.ObjectRef]time.Time{}, map[rewrite.ObjectRef]bool{}, map[rewrite.ObjectRef]*apply.Run{}
	native := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "native"}, Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
		CSI: &v1.CSIPersistentVolumeSource{Driver: plugin.RBDDriverName, VolumeHandle: "0001-0024-b7f67366-bb43-f32e-07d8-a261a7840da9-0000000000000002-6f1c0000-4b53-9a61-2b0c-1d9a7e110000"}}}}
	stub, _ := trimPV(native)
	if _, ok := stub.(*pvStub); !ok {
		t.Fatalf("want a stub, got %T", stub)
	}
	c.enqueuePV(stub)
	c.enqueuePV(cache.DeletedFinalStateUnknown{Key: "native", Obj: stub})
	if n := c.pvQueue.Len(); n != 0 {
		t.Fatalf("an untracked stub queued %d times", n)
	}
	c.started[rewrite.PVRef("native")] = true
	c.enqueuePV(stub)
	if n := c.pvQueue.Len(); n != 1 {
		t.Fatalf("a stub this process wrote to: queued %d, want 1", n)
	}
	inTree := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "in-tree"}, Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
		RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{"10.0.0.1:6789"}, RBDImage: "img"}}}}
	c.enqueuePV(inTree)
	if n := c.pvQueue.Len(); n != 2 {
		t.Fatalf("a whole PV: queue holds %d, want 2", n)
	}
}

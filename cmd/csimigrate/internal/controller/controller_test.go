package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// These tests cover the controller's own logic (queues, back-off, Event
// deduplication) on client-go's fake clientset; that the API server and
// RBAC accept what it does is proven against the real kube-apiserver in
// the command's TestController… tests.

func vspherePV(name string) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource:        v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[ds] kubevols/" + name + ".vmdk"}},
		},
	}
}

type fixture struct {
	client *fake.Clientset
	rec    *record.FakeRecorder
	m      *Metrics
	c      *Controller
	cancel func()
	done   chan error
}

func start(t *testing.T, o Options, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewSimpleClientset(objs...)
	return startWith(t, client, o)
}

func startWith(t *testing.T, client *fake.Clientset, o Options) *fixture {
	t.Helper()
	if o.Recheck == 0 {
		o.Recheck = 50 * time.Millisecond
	}
	o.StatusEvery = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	c, rec, m := newForTest(t, ctx, client, o)
	f := &fixture{client: client, rec: rec, m: m, c: c, cancel: cancel, done: make(chan error, 1)}
	go func() { f.done <- c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-f.done })
	return f
}

// newForTest builds a controller on client with the options, holding the
// writer Lease (as the command's leader election takes it) unless o has
// one, with a fake recorder and metrics of its own.
func newForTest(t *testing.T, ctx context.Context, client *fake.Clientset, o Options) (*Controller, *record.FakeRecorder, *Metrics) {
	t.Helper()
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{StatusResource: "CSIMigrationList"})
	rec := record.NewFakeRecorder(1000)
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if o.Writer.Lease == nil {
		// The writer Lease, as the command's leader election takes it.
		_, lease, err := apply.HoldLease(ctx, client, apply.DefaultStateNamespace, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lease.Release(context.Background()) })
		o.Writer.Lease = lease
	}
	c, err := New(client, dyn, tr, klog.Background().V(100), rec, m, o)
	if err != nil {
		t.Fatal(err)
	}
	return c, rec, m
}

// events drains the Events recorded so far.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func waitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func rewritten(f *fixture, name string) error {
	pv, err := f.client.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if pv.Spec.CSI == nil || pv.Annotations[rewrite.AnnReclaimPolicy] != "" {
		return fmt.Errorf("pv/%s not rewritten yet", name)
	}
	return nil
}

var driver = &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "csi.vsphere.vmware.com"}}

// An API error backs off and is retried: the PV is rewritten in the end,
// the failures are counted, and the failure's Event is recorded once.
func TestControllerBacksOffAPIErrors(t *testing.T) {
	client := fake.NewSimpleClientset(vspherePV("pv1"), driver)
	var fails atomic.Int32
	client.PrependReactor("update", "persistentvolumes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fails.Add(1) <= 3 {
			return true, nil, apierrors.NewInternalError(errors.New("etcd is having a bad day"))
		}
		return false, nil, nil
	})
	f := startWith(t, client, Options{})
	waitFor(t, "the rewrite after the errors", func() error { return rewritten(f, "pv1") })
	if got := testutil.ToFloat64(f.m.failures.WithLabelValues("pv")); got != 3 {
		t.Errorf("failures counted: %v, want 3", got)
	}
	failed := 0
	for _, e := range f.events() {
		if strings.Contains(e, ReasonFailed) {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d %s Events for one failing object, want 1 (deduplicated)", failed, ReasonFailed)
	}
}

// boundRBD is an in-tree RBD PV pv1 bound to claim ns/data, with those
// access modes and reclaim policy, and the Secret ns/ceph it names.
func boundRBD(mode v1.PersistentVolumeAccessMode, policy v1.PersistentVolumeReclaimPolicy) (*v1.PersistentVolume, *v1.PersistentVolumeClaim, *v1.Secret) {
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv1", Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "kubernetes.io/rbd"}},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []v1.PersistentVolumeAccessMode{mode},
			PersistentVolumeReclaimPolicy: policy,
			ClaimRef:                      &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "ns", Name: "data", UID: "uid-data"},
			PersistentVolumeSource: v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{"10.0.0.1:6789"},
				RBDImage: "kubernetes-dynamic-pvc-0b3c5a4e-6f1d-11ec-9f4b-0242ac110002", RBDPool: "rbd", SecretRef: &v1.SecretReference{Namespace: "ns", Name: "ceph"}}},
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound},
	}
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "uid-data"},
		Spec:   v1.PersistentVolumeClaimSpec{VolumeName: "pv1", AccessModes: []v1.PersistentVolumeAccessMode{mode}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ceph"}, Data: map[string][]byte{"key": []byte("AQD8P0ZmAAAAABAAa2V5LW9mLXRoZS10ZXN0cw==")}}
	return pv, claim, secret
}

// The controller writes only while it holds the writer Lease: with the
// Lease held by no one here, the PV stays as it was, with a failure's Event
// naming the Lease; once it holds, the PV is rewritten.
func TestControllerWritesOnlyHoldingLease(t *testing.T) {
	client := fake.NewSimpleClientset(vspherePV("pv1"), driver)
	var holding atomic.Bool
	f := startWith(t, client, Options{Writer: apply.Options{Lease: apply.HolderFunc(holding.Load)}})
	waitFor(t, "the refused write", func() error {
		if testutil.ToFloat64(f.m.failures.WithLabelValues("pv")) == 0 {
			return errors.New("no failure yet")
		}
		return nil
	})
	got, err := client.CoreV1().PersistentVolumes().Get(context.Background(), "pv1", metav1.GetOptions{})
	if err != nil || got.Spec.VsphereVolume == nil || len(got.Annotations) != 0 {
		t.Fatalf("pv1 changed without the Lease: %+v %v", got, err)
	}
	if cms, err := client.CoreV1().ConfigMaps(apply.DefaultStateNamespace).List(context.Background(), metav1.ListOptions{}); err != nil || len(cms.Items) != 0 {
		t.Fatalf("state written without the Lease: %v %v", cms, err)
	}
	named := false
	for _, e := range f.events() {
		named = named || strings.Contains(e, ReasonFailed) && strings.Contains(e, "writer Lease is not held")
	}
	if !named {
		t.Error("no Failed Event naming the writer Lease")
	}
	holding.Store(true)
	waitFor(t, "the rewrite once holding", func() error { return rewritten(f, "pv1") })
}

// A refused PV is left exactly as it was; its refusal is an Event once,
// however often it is looked at again; it is counted by reason.
func TestControllerRefusalDeduplicated(t *testing.T) {
	pv := vspherePV("shared")
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "gone", UID: "uid-gone"}
	f := start(t, Options{Recheck: 20 * time.Millisecond}, pv, driver)
	waitFor(t, "the refusal", func() error {
		if testutil.ToFloat64(f.m.refusals.WithLabelValues("pv", string(rewrite.CodeClaimGone))) == 0 {
			return errors.New("not refused yet")
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond) // several rechecks
	n := 0
	for _, e := range f.events() {
		if strings.Contains(e, string(rewrite.CodeClaimGone)) {
			n++
		}
	}
	// One on the PV and one on its claim.
	if n != 2 {
		t.Errorf("%d refusal Events, want 2 (the PV and its claim, once each)", n)
	}
	got, err := f.client.CoreV1().PersistentVolumes().Get(context.Background(), "shared", metav1.GetOptions{})
	if err != nil || got.Spec.VsphereVolume == nil || got.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete || len(got.Annotations) != 0 {
		t.Errorf("the refused PV changed: %+v %v", got, err)
	}
}

// An object still refused for the same reason gets its Event again once
// EventRefresh has passed (before the API server's Event TTL would leave
// kubectl describe empty), while the refusal is counted once.
func TestControllerRefusalSaidAgain(t *testing.T) {
	pv := vspherePV("shared")
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "gone", UID: "uid-gone"}
	f := start(t, Options{Recheck: 20 * time.Millisecond, EventRefresh: 200 * time.Millisecond}, pv, driver)
	n := 0
	waitFor(t, "the refusal's Event said again", func() error {
		for _, e := range f.events() {
			if strings.Contains(e, string(rewrite.CodeClaimGone)) {
				n++
			}
		}
		if n < 4 {
			return fmt.Errorf("%d refusal Events, want the PV's and its claim's twice", n)
		}
		return nil
	})
	if got := testutil.ToFloat64(f.m.refusals.WithLabelValues("pv", string(rewrite.CodeClaimGone))); got != 1 {
		t.Errorf("refusals counted %v times, want once", got)
	}
}

// Out of scope (another plugin, a label selector) is never touched; a
// driver not registered makes it wait, and its registration lets it go.
func TestControllerScopeAndDriver(t *testing.T) {
	labelled := vspherePV("labelled")
	labelled.Labels = map[string]string{"migrate": "yes"}
	other := vspherePV("other")
	f := start(t, Options{Plugins: []string{"kubernetes.io/vsphere-volume"}, PVSelector: mustSelector(t, "migrate=yes")}, labelled, other)
	waitFor(t, "waiting for the driver", func() error {
		for _, e := range f.events() {
			if strings.Contains(e, ReasonWaitingForDriver) {
				return nil
			}
		}
		return errors.New("no WaitingForDriver Event")
	})
	if _, err := f.client.StorageV1().CSIDrivers().Create(context.Background(), driver, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rewrite once the driver is registered", func() error { return rewritten(f, "labelled") })
	if err := rewritten(f, "other"); err == nil {
		t.Error("the PV out of the label selector was rewritten")
	}
	if _, err := New(f.client, dynfake.NewSimpleDynamicClient(runtime.NewScheme()), f.c.tr, klog.Background(), f.rec, f.m, Options{Plugins: []string{"kubernetes.io/nfs"}}); err == nil || !strings.Contains(err.Error(), "kubernetes.io/nfs") {
		t.Errorf("a plugin csimigrate does not migrate: %v", err)
	}
}

// A run done hands on its replacement as it last saw it: the Migrated
// Event names it (the new PV's uid) and no read is made for it.
func TestControllerDoneNamesTheRunsReplacement(t *testing.T) {
	client := fake.NewSimpleClientset()
	c, m, _, _ := notRunning(t, client)
	rec := &objectRecorder{}
	c.rec = rec
	c.started[rewrite.PVRef("pv1")] = true
	live := vspherePV("pv1")
	live.UID = "uid-of-the-replacement"
	if _, _, err := c.outcome(rewrite.PVRef("pv1"), (*v1.PersistentVolume)(nil), apply.Progress{Done: true, Object: live}, nil); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.migrated.WithLabelValues("pv")); got != 1 {
		t.Errorf("migrated counted %v, want 1", got)
	}
	if len(rec.objects) != 1 || rec.reasons[0] != ReasonMigrated || rec.objects[0] != runtime.Object(live) {
		t.Errorf("Events %v on %v, want one %s on the replacement", rec.reasons, rec.objects, ReasonMigrated)
	}
	if a := client.Actions(); len(a) != 0 {
		t.Errorf("requests made for the Event: %v", a)
	}
}

// objectRecorder keeps the objects Events are about.
type objectRecorder struct {
	objects []runtime.Object
	reasons []string
}

func (r *objectRecorder) Event(o runtime.Object, _, reason, _ string) {
	r.objects, r.reasons = append(r.objects, o), append(r.reasons, reason)
}

func (r *objectRecorder) Eventf(o runtime.Object, typ, reason, _ string, _ ...any) {
	r.Event(o, typ, reason, "")
}

func (r *objectRecorder) AnnotatedEventf(o runtime.Object, _ map[string]string, typ, reason, _ string, _ ...any) {
	r.Event(o, typ, reason, "")
}

func mustSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// A PV the lister no longer holds when its rewrite finishes (the old
// object deleted, the new one not yet seen) is reported from the live
// object: no nil PV is dereferenced (the race TestControllerBacksOffAPIErrors
// once hit under -race).
func TestControllerDoneWithoutListedPV(t *testing.T) {
	c, m, rec, _ := notRunning(t, fake.NewSimpleClientset(vspherePV("pv1")))
	c.started[rewrite.PVRef("pv1")] = true
	if _, _, err := c.outcome(rewrite.PVRef("pv1"), (*v1.PersistentVolume)(nil), apply.Progress{Done: true}, nil); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.migrated.WithLabelValues("pv")); got != 1 {
		t.Errorf("migrated counted %v, want 1", got)
	}
	select {
	case e := <-rec.Events:
		if !strings.Contains(e, ReasonMigrated) {
			t.Errorf("event %q, want %s", e, ReasonMigrated)
		}
	default:
		t.Errorf("no %s Event for the live PV", ReasonMigrated)
	}
}

// What the writer names beyond the translation reaches the cluster: an RBD
// PV with Delete whose class is gone keeps Retain, and its ReadWriteMany
// file system is narrowed to ReadWriteOnce; each is an Event on the PV and
// on its claim, once.
func TestControllerNoticesAsEvents(t *testing.T) {
	pv, claim, secret := boundRBD(v1.ReadWriteMany, v1.PersistentVolumeReclaimDelete)
	pv.Spec.StorageClassName = "gone"
	f := start(t, Options{Recheck: 20 * time.Millisecond}, pv, claim, secret, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: plugin.RBDDriverName}})
	var events []string
	waitFor(t, "the rewrite", func() error {
		events = append(events, f.events()...)
		return rewritten(f, "pv1")
	})
	time.Sleep(200 * time.Millisecond) // rechecks
	events = append(events, f.events()...)
	count := func(reason, text string) int {
		n := 0
		for _, e := range events {
			if strings.Contains(e, " "+reason+" ") && strings.Contains(e, text) {
				n++
			}
		}
		return n
	}
	if n := count(ReasonKeptRetain, "Retain"); n != 2 {
		t.Errorf("%d %s Events, want 2 (the PV and its claim, once each): %q", n, ReasonKeptRetain, events)
	}
	if n := count(ReasonNoted, "ReadWriteOnce"); n != 2 {
		t.Errorf("%d %s Events naming the narrowed access modes, want 2: %q", n, ReasonNoted, events)
	}
	got, err := f.client.CoreV1().PersistentVolumes().Get(context.Background(), "pv1", metav1.GetOptions{})
	if err != nil || got.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain {
		t.Errorf("the rewritten PV: %+v, %v; want reclaim policy Retain", got, err)
	}
}

// A Ceph volume waits while Ceph CSI does not serve the cluster entry its
// migrated form names: left as it was, with the refusal's Event naming the
// entry; once the entry is served, it is rewritten.
func TestControllerWaitsForCephEntry(t *testing.T) {
	pv, claim, secret := boundRBD(v1.ReadWriteOnce, v1.PersistentVolumeReclaimRetain)
	var served atomic.Bool
	entry := ceph.EntryFor([]string{"10.0.0.1:6789"})
	o := Options{Recheck: 20 * time.Millisecond, Writer: apply.Options{CephServed: func(context.Context, string) (ceph.ClusterConfig, error) {
		if served.Load() {
			return ceph.NewClusterConfig(entry), nil
		}
		return ceph.NewClusterConfig(), nil
	}}}
	f := start(t, o, pv, claim, secret, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: plugin.RBDDriverName}})
	var events []string
	waitFor(t, "the refusal", func() error {
		events = append(events, f.events()...)
		for _, e := range events {
			if strings.Contains(e, string(rewrite.CodeCephEntryMissing)) && strings.Contains(e, entry.ClusterID) && strings.Contains(e, "csimigrate plan -live prints it") {
				return nil
			}
		}
		return errors.New("no CephEntryMissing Event naming the entry yet")
	})
	got, err := f.client.CoreV1().PersistentVolumes().Get(context.Background(), "pv1", metav1.GetOptions{})
	if err != nil || got.Spec.RBD == nil || len(got.Annotations) != 1 {
		t.Fatalf("pv1 changed while its entry is not served: %+v %v", got, err)
	}
	served.Store(true)
	waitFor(t, "the rewrite once the entry is served", func() error { return rewritten(f, "pv1") })
}

// A Ceph volume is never taken as served when the entries cannot be read:
// while the reader answers with a refusal (the command's when its
// ServiceAccount may not list what finds them), the PV is left as it was
// with that refusal's code and reason as its Event; once the reader can
// tell, the PV is rewritten.
func TestControllerCephEntryUnchecked(t *testing.T) {
	pv, claim, secret := boundRBD(v1.ReadWriteOnce, v1.PersistentVolumeReclaimRetain)
	var granted atomic.Bool
	entry := ceph.EntryFor([]string{"10.0.0.1:6789"})
	o := Options{Recheck: 20 * time.Millisecond, Writer: apply.Options{CephServed: func(context.Context, string) (ceph.ClusterConfig, error) {
		if granted.Load() {
			return ceph.NewClusterConfig(entry), nil
		}
		return ceph.ClusterConfig{}, &rewrite.Refusal{Code: rewrite.CodeCephEntryUnchecked, Reason: "the controller may not list configmaps"}
	}}}
	f := start(t, o, pv, claim, secret, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: plugin.RBDDriverName}})
	var events []string
	waitFor(t, "the refusal", func() error {
		events = append(events, f.events()...)
		for _, e := range events {
			if strings.Contains(e, string(rewrite.CodeCephEntryUnchecked)) && strings.Contains(e, "may not list configmaps") {
				return nil
			}
		}
		return fmt.Errorf("no CephEntryUnchecked Event naming the permission yet: %q", events)
	})
	got, err := f.client.CoreV1().PersistentVolumes().Get(context.Background(), "pv1", metav1.GetOptions{})
	if err != nil || got.Spec.RBD == nil || got.ResourceVersion != pv.ResourceVersion {
		t.Fatalf("pv1 changed while its entry could not be checked: %+v %v", got, err)
	}
	if n := testutil.ToFloat64(f.m.refusals.WithLabelValues("pv", string(rewrite.CodeCephEntryUnchecked))); n != 1 {
		t.Errorf("refusals counted: %v, want 1", n)
	}
	granted.Store(true)
	waitFor(t, "the rewrite once the entries can be read", func() error { return rewritten(f, "pv1") })
}

// An in-tree class is replaced after its in-tree PVs in scope, as rewrite
// -apply orders them (their rewrite reads the class's deletion secret):
// while a PV of the class is left (here refused: its claim is gone), the
// class waits, said once; once the PV is gone the class is replaced.
func TestControllerClassAfterPVs(t *testing.T) {
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "kubernetes.io/rbd",
		Parameters: map[string]string{"monitors": "10.0.0.1:6789", "adminSecretName": "ceph-admin", "adminSecretNamespace": "kube-system", "pool": "rbd"}}
	admin := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "ceph-admin"}, Data: map[string][]byte{"key": []byte("AQD8P0ZmAAAAABAAa2V5LW9mLXRoZS10ZXN0cw==")}}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv1"},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
			StorageClassName:              "fast",
			ClaimRef:                      &v1.ObjectReference{Namespace: "ns", Name: "gone", UID: "uid-gone"},
			PersistentVolumeSource: v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{"10.0.0.1:6789"},
				RBDImage: "kubernetes-dynamic-pvc-0b3c5a4e-6f1d-11ec-9f4b-0242ac110002", RBDPool: "rbd", SecretRef: &v1.SecretReference{Namespace: "kube-system", Name: "ceph-admin"}}},
		},
	}
	f := start(t, Options{Recheck: 20 * time.Millisecond}, class, admin, pv, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: plugin.RBDDriverName}})
	var events []string
	waitFor(t, "the class waiting for its PV", func() error {
		events = append(events, f.events()...)
		for _, e := range events {
			if strings.Contains(e, ReasonWaitingForPVs) && strings.Contains(e, "pv1") {
				return nil
			}
		}
		return errors.New("no WaitingForPVs Event")
	})
	time.Sleep(200 * time.Millisecond) // rechecks
	events = append(events, f.events()...)
	n := 0
	for _, e := range events {
		if strings.Contains(e, ReasonWaitingForPVs) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d %s Events, want 1", n, ReasonWaitingForPVs)
	}
	sc, err := f.client.StorageV1().StorageClasses().Get(context.Background(), "fast", metav1.GetOptions{})
	if err != nil || sc.Provisioner != "kubernetes.io/rbd" {
		t.Fatalf("the class was replaced before its PV: %+v, %v", sc, err)
	}
	if err := f.client.CoreV1().PersistentVolumes().Delete(context.Background(), "pv1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the class replaced once its PV is gone", func() error {
		sc, err := f.client.StorageV1().StorageClasses().Get(context.Background(), "fast", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if sc.Provisioner != "rbd.csi.ceph.com" {
			return fmt.Errorf("provisioner %s", sc.Provisioner)
		}
		return nil
	})
}

// The status object's conditions are metav1.Conditions: writing the same
// status again sends nothing, and a condition keeps its lastTransitionTime
// while its status stays and gets a new one when it changes.
func TestControllerStatusConditions(t *testing.T) {
	c, _, _, dyn := notRunning(t, fake.NewSimpleClientset())
	ctx := context.Background()
	read := func() map[string]metav1.Condition {
		t.Helper()
		u, err := dyn.Resource(StatusResource).Get(ctx, StatusName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var s Status
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object["status"].(map[string]any), &s); err != nil {
			t.Fatal(err)
		}
		out := map[string]metav1.Condition{}
		for _, cd := range s.Conditions {
			out[cd.Type] = cd
		}
		return out
	}
	updates := func() int {
		n := 0
		for _, a := range dyn.Actions() {
			if a.GetVerb() == "update" && a.GetSubresource() == "status" {
				n++
			}
		}
		return n
	}
	s := Status{InTreePVs: 2, Reasons: map[string]int{}}
	if err := c.writeStatus(ctx, s); err != nil {
		t.Fatal(err)
	}
	first := read()
	if first["Progressing"].Status != metav1.ConditionTrue || first["Blocked"].Status != metav1.ConditionFalse || first["Complete"].LastTransitionTime.Time.IsZero() {
		t.Fatalf("conditions %+v", first)
	}
	n := updates()
	if err := c.writeStatus(ctx, s); err != nil {
		t.Fatal(err)
	}
	if updates() != n {
		t.Error("the same status was written again")
	}
	time.Sleep(1100 * time.Millisecond) // lastTransitionTime has seconds
	s.Blocked, s.Reasons = 2, map[string]int{"InUse": 2}
	if err := c.writeStatus(ctx, s); err != nil {
		t.Fatal(err)
	}
	second := read()
	if second["Blocked"].Status != metav1.ConditionTrue || !second["Blocked"].LastTransitionTime.After(first["Blocked"].LastTransitionTime.Time) {
		t.Errorf("Blocked after it changed: %+v (was %+v)", second["Blocked"], first["Blocked"])
	}
	if !second["Complete"].LastTransitionTime.Time.Equal(first["Complete"].LastTransitionTime.Time) {
		t.Errorf("Complete's lastTransitionTime moved while its status stayed: %v -> %v", first["Complete"].LastTransitionTime, second["Complete"].LastTransitionTime)
	}
}

// notRunning is a Controller on client that is built but not run, for a
// test of one of its methods, with its metrics, recorder and dynamic client.
func notRunning(t *testing.T, client *fake.Clientset) (*Controller, *Metrics, *record.FakeRecorder, *dynfake.FakeDynamicClient) {
	t.Helper()
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(10)
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{StatusResource: "CSIMigrationList"})
	c, err := New(client, dyn, tr, klog.Background().V(100), rec, m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c, m, rec, dyn
}

// A PV in use waits without polling: the pods informer tells the
// controller when the last pod of its claim finishes, and the PV is
// rewritten then, long before the recheck (an hour here).
func TestControllerPodFinishedWakesPV(t *testing.T) {
	pv := vspherePV("used")
	pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "ns", Name: "data", UID: "uid-data"}
	pv.Status.Phase = v1.VolumeBound
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "uid-data"},
		Spec:   v1.PersistentVolumeClaimSpec{VolumeName: "used", AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"},
		Spec:   v1.PodSpec{NodeName: "node-1", Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}},
		Status: v1.PodStatus{Phase: v1.PodRunning}}
	f := start(t, Options{Recheck: time.Hour}, pv, claim, pod, driver)
	waitFor(t, "the in-use refusal", func() error {
		if testutil.ToFloat64(f.m.refusals.WithLabelValues("pv", string(rewrite.CodeInUse))) == 0 {
			return errors.New("not refused yet")
		}
		return nil
	})
	if err := rewritten(f, "used"); err == nil {
		t.Fatal("a PV in use was rewritten")
	}
	done := pod.DeepCopy()
	done.Status.Phase = v1.PodSucceeded
	if _, err := f.client.CoreV1().Pods("ns").UpdateStatus(context.Background(), done, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rewrite once the pod finished", func() error { return rewritten(f, "used") })
}

// A PV that a reconciler keeps is left as it was, with a KeptByReconciler
// Event naming the keeper, until the admin annotates it to say its source
// has changed; the controller then rewrites it.
func TestControllerKeptUntilSourceChanged(t *testing.T) {
	pv := vspherePV("kept")
	pv.Labels = map[string]string{"kustomize.toolkit.fluxcd.io/name": "storage", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
	f := start(t, Options{Recheck: 20 * time.Millisecond}, pv, driver)
	var events []string
	waitFor(t, "the refusal", func() error {
		events = append(events, f.events()...)
		for _, e := range events {
			if strings.Contains(e, string(rewrite.CodeKeptByReconciler)) && strings.Contains(e, "Flux Kustomization flux-system/storage") {
				return nil
			}
		}
		return fmt.Errorf("no KeptByReconciler Event naming the Kustomization yet: %q", events)
	})
	ctx := context.Background()
	got, err := f.client.CoreV1().PersistentVolumes().Get(ctx, "kept", metav1.GetOptions{})
	if err != nil || got.Spec.VsphereVolume == nil || got.ResourceVersion != pv.ResourceVersion {
		t.Fatalf("the kept PV changed: %+v %v", got, err)
	}
	got.Annotations = map[string]string{rewrite.AnnSourceChanged: "true"}
	if _, err := f.client.CoreV1().PersistentVolumes().Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rewrite once the source is said to have changed", func() error { return rewritten(f, "kept") })
}

// The status names the blocked objects with their codes, sorted, bounded
// by MaxBlockedListed, while Blocked counts every one; waiting objects are
// not blocked.
func TestControllerStatusListsBlocked(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, _, _ := newForTest(t, ctx, fake.NewSimpleClientset(), Options{})
	for i := range MaxBlockedListed + 10 {
		c.setBlocked(rewrite.PVRef(fmt.Sprintf("pv-%03d", i)), string(rewrite.CodeInUse))
	}
	c.setBlocked(rewrite.ClassRef("rbd"), string(rewrite.CodeCephEntryMissing))
	c.setBlocked(rewrite.PVRef("waiting"), ReasonWaitingForDriver)
	s, err := c.count()
	if err != nil {
		t.Fatal(err)
	}
	if s.Blocked != MaxBlockedListed+11 || s.Waiting != 1 || len(s.BlockedObjects) != MaxBlockedListed {
		t.Fatalf("blocked %d, waiting %d, listed %d: want %d, 1, %d", s.Blocked, s.Waiting, len(s.BlockedObjects), MaxBlockedListed+11, MaxBlockedListed)
	}
	if s.BlockedObjects[0] != "pv/pv-000: InUse" || !slices.IsSorted(s.BlockedObjects) {
		t.Errorf("listed %v: want sorted, starting with pv/pv-000: InUse", s.BlockedObjects[:3])
	}
}

// The rewritten PV keeps every annotation of the in-tree one, kubectl's
// last-applied copy too: the writer's first write is made from the
// informer's copy with its resourceVersion (an informer that kept less of
// an object, as a memory trim would, would silently drop what it did not
// keep; the trim was measured and left out for that reason).
func TestControllerWritesFromTheServersCopy(t *testing.T) {
	pv := vspherePV("applied")
	pv.Annotations = map[string]string{v1.LastAppliedConfigAnnotation: `{"kind":"PersistentVolume"}`, "team": "storage"}
	f := start(t, Options{}, pv, driver)
	waitFor(t, "the rewrite", func() error { return rewritten(f, "applied") })
	got, err := f.client.CoreV1().PersistentVolumes().Get(context.Background(), "applied", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations[v1.LastAppliedConfigAnnotation] == "" || got.Annotations["team"] != "storage" {
		t.Errorf("the rewritten PV lost annotations the cache did not keep: %v", got.Annotations)
	}
}

// A step cut off by the controller's stop (its context canceled) is not a
// failure: no MigrationFailed Event, no failure counted, no back-off. An
// API error is all three.
func TestControllerStopIsNotAFailure(t *testing.T) {
	pv := vspherePV("pv1")
	c, m, rec, _ := notRunning(t, fake.NewSimpleClientset(pv))
	stopped := fmt.Errorf("updating PV pv1: %w", context.Canceled)
	if after, now, err := c.outcome(rewrite.PVRef("pv1"), pv, apply.Progress{}, stopped); err != nil || now || after != 0 {
		t.Errorf("a stop: after %s, now %v, err %v; want nothing", after, now, err)
	}
	if got := testutil.ToFloat64(m.failures.WithLabelValues("pv")); got != 0 {
		t.Errorf("a stop counted as %v failures", got)
	}
	select {
	case e := <-rec.Events:
		t.Errorf("a stop gave the Event %q", e)
	default:
	}
	if _, _, err := c.outcome(rewrite.PVRef("pv1"), pv, apply.Progress{}, errors.New("the server is on fire")); err == nil {
		t.Error("an API error is not returned for the back-off")
	}
	if got := testutil.ToFloat64(m.failures.WithLabelValues("pv")); got != 1 {
		t.Errorf("an API error counted as %v failures, want 1", got)
	}
	select {
	case e := <-rec.Events:
		if !strings.Contains(e, ReasonFailed) {
			t.Errorf("Event %q, want %s", e, ReasonFailed)
		}
	default:
		t.Errorf("no %s Event for an API error", ReasonFailed)
	}
}

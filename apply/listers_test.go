package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// TestWriterWithStaleListers gives the writer listers whose PVs lag the
// API server (as an informer's cache may): the writer must build each
// replacement from the live PV, never from the cached copy, and still
// converge. It also shows that the checks read the listers: a pod only the
// Pods lister knows makes the PV in use.
func TestWriterWithStaleListers(t *testing.T) {
	s, err := testenv.Start(os.Stderr)
	if err != nil {
		t.Fatalf("cannot start kube-apiserver: %v", err)
	}
	t.Cleanup(s.Stop)
	c := s.Client
	ctx := context.Background()
	ns := "stale"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// seed creates a bound PV with policy, then changes it on the server
	// (a label), and returns the copy from before the change and the claim.
	seed := func(name string, policy v1.PersistentVolumeReclaimPolicy) (*v1.PersistentVolume, *v1.PersistentVolumeClaim) {
		pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, testenv.ClaimFor(ns, name, name), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pv := testenv.BoundPV(name, ns, name, pvc.UID, testenv.RBDSource(ns, name))
		pv.Spec.PersistentVolumeReclaimPolicy = policy
		testenv.EnsureSecrets(t, c, pv)
		stale, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		live := stale.DeepCopy()
		live.Labels = map[string]string{"changed": "after-the-cache"}
		if _, err := c.CoreV1().PersistentVolumes().Update(ctx, live, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return stale, pvc
	}
	listers := func(pvs []*v1.PersistentVolume, claims []*v1.PersistentVolumeClaim, pods []*v1.Pod) *Listers {
		pvIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
		claimIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		podIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		stateIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		for _, o := range pvs {
			_ = pvIdx.Add(o)
		}
		for _, o := range claims {
			_ = claimIdx.Add(o)
		}
		for _, o := range pods {
			_ = podIdx.Add(o)
		}
		return &Listers{PVs: corelisters.NewPersistentVolumeLister(pvIdx), Claims: corelisters.NewPersistentVolumeClaimLister(claimIdx),
			Pods: corelisters.NewPodLister(podIdx), States: corelisters.NewConfigMapLister(stateIdx)}
	}

	// Delete: the first write (Retain) carries the cached resourceVersion
	// and fails; Retain: the first write is the saved state, built only
	// once the cached copy is confirmed. Both end with Retain: the PVs
	// name no deletion secret.
	for _, policy := range []v1.PersistentVolumeReclaimPolicy{v1.PersistentVolumeReclaimDelete, v1.PersistentVolumeReclaimRetain} {
		name := "stale-" + strings.ToLower(string(policy))
		stale, pvc := seed(name, policy)
		var out bytes.Buffer
		w := newWriter(t, c, &out, Options{Listers: listers([]*v1.PersistentVolume{stale}, []*v1.PersistentVolumeClaim{pvc}, nil)})
		if _, err := w.PVs(ctx, []Target{{Name: name}}); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out.String())
		}
		got := getPV(t, c, name)
		if got.Spec.CSI == nil || got.Labels["changed"] != "after-the-cache" || got.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain {
			t.Errorf("%s: the replacement is not built from the live PV: csi %v, labels %v, policy %s\n%s", name, got.Spec.CSI != nil, got.Labels, got.Spec.PersistentVolumeReclaimPolicy, out.String())
		}
	}
	noStateLeft(t, c)

	// In use, as only the Pods lister says: refused, left as it was.
	name := "in-use"
	_, pvc := seed(name, v1.PersistentVolumeReclaimDelete)
	before := getPV(t, c, name)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "user", Namespace: ns},
		Spec:   v1.PodSpec{NodeName: "node-1", Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}},
		Status: v1.PodStatus{Phase: v1.PodRunning}}
	var out bytes.Buffer
	w := newWriter(t, c, &out, Options{Listers: listers([]*v1.PersistentVolume{before}, []*v1.PersistentVolumeClaim{pvc}, []*v1.Pod{pod})})
	_, err = w.PVs(ctx, []Target{{Name: name}})
	var ref *rewrite.Refusal
	if !errors.As(err, &ref) || ref.Code != rewrite.CodeInUse {
		t.Fatalf("a PV whose claim a listed pod uses: got %v, want a refusal %s\n%s", err, rewrite.CodeInUse, out.String())
	}
	unchanged(t, c, before)

	// In use, as only PodsUsing says (a cache indexed by claim; a finished
	// pod of the claim does not count): refused, left as it was.
	l := listers([]*v1.PersistentVolume{before}, []*v1.PersistentVolumeClaim{pvc}, nil)
	var asked []string
	l.PodsUsing = func(ns, claim string) ([]v1.Pod, error) {
		asked = append(asked, ns+"/"+claim)
		done := *pod.DeepCopy()
		done.Name, done.Status.Phase = "done", v1.PodSucceeded
		return []v1.Pod{*pod, done}, nil
	}
	out.Reset()
	w = newWriter(t, c, &out, Options{Listers: l})
	_, err = w.PVs(ctx, []Target{{Name: name}})
	if !errors.As(err, &ref) || ref.Code != rewrite.CodeInUse || !strings.Contains(ref.Reason, "user") || strings.Contains(ref.Reason, "done") {
		t.Fatalf("a PV whose claim PodsUsing names a running pod of: got %v, want a refusal %s naming pod user only\n%s", err, rewrite.CodeInUse, out.String())
	}
	if len(asked) == 0 || asked[0] != ns+"/"+name {
		t.Errorf("PodsUsing asked %v, want %s/%s", asked, ns, name)
	}
	unchanged(t, c, before)

	// A claim the Claims lister leaves out is read from the API server,
	// not taken as missing: the PV is rewritten.
	name = "claim-not-cached"
	stale, _ := seed(name, v1.PersistentVolumeReclaimDelete)
	out.Reset()
	w = newWriter(t, c, &out, Options{Listers: listers([]*v1.PersistentVolume{stale}, nil, nil)})
	if _, err := w.PVs(ctx, []Target{{Name: name}}); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, out.String())
	}
	if got := getPV(t, c, name); got.Spec.CSI == nil {
		t.Errorf("%s: not rewritten\n%s", name, out.String())
	}
	noStateLeft(t, c)
}

// A cache's PodsUsing that does not hold a claim's pods (ErrNotCached)
// sends the in-use check to the API server; any other error ends it.
func TestPodsUsingNotCached(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Spec: v1.PodSpec{NodeName: "n1",
		Volumes: []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	for _, tc := range []struct {
		answer  error
		want    int
		wantErr bool
	}{{ErrNotCached, 1, false}, {fmt.Errorf("the pods of claim ns/data: %w", ErrNotCached), 1, false}, {errors.New("broken"), 0, true}} {
		w, err := New(fake.NewClientset(pod), tr, klog0(), nil, Options{DryRun: true, Listers: &Listers{PodsUsing: func(string, string) ([]v1.Pod, error) { return nil, tc.answer }}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := w.podsUsing(context.Background(), "ns", "data")
		if (err != nil) != tc.wantErr || len(got) != tc.want {
			t.Errorf("PodsUsing answering %v: %d pods, %v; want %d pods, error %t", tc.answer, len(got), err, tc.want, tc.wantErr)
		}
	}
}

package controller

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/plugin"
)

// A list is read page by page with the continue token, as a consistent
// read (whatever resourceVersion the reflector asks), each object kept as
// keep makes it before the next page, at the first page's
// resourceVersion; an error of any page is the list's.
func TestListKept(t *testing.T) {
	var sent []metav1.ListOptions
	pages := []*v1.PodList{
		{ListMeta: metav1.ListMeta{ResourceVersion: "100", Continue: "a"}, Items: []v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p0"}}, {ObjectMeta: metav1.ObjectMeta{Name: "p1"}}}},
		{ListMeta: metav1.ListMeta{ResourceVersion: "100", Continue: "b"}, Items: []v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p2"}}}},
		{ListMeta: metav1.ListMeta{ResourceVersion: "100"}, Items: []v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p3"}}}},
	}
	fail := -1
	list := func(_ context.Context, o metav1.ListOptions) (*v1.PodList, error) {
		sent = append(sent, o)
		i := len(sent) - 1
		if i == fail {
			return nil, errors.New("page lost")
		}
		return pages[i], nil
	}
	var kept []string
	keep := func(o runtime.Object) runtime.Object {
		pod := o.(*v1.Pod)
		kept = append(kept, pod.Name)
		return newPodUse(pod)
	}
	got, err := listKept(context.Background(), metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, list, keep)
	if err != nil {
		t.Fatal(err)
	}
	want := []metav1.ListOptions{{Limit: listPage}, {Limit: listPage, Continue: "a"}, {Limit: listPage, Continue: "b"}}
	if diff := cmp.Diff(want, sent); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	l := got.(*metav1.List)
	if l.ResourceVersion != "100" || len(l.Items) != 4 {
		t.Fatalf("list at %q with %d items, want 100 and 4", l.ResourceVersion, len(l.Items))
	}
	for i, it := range l.Items {
		if u, ok := it.Object.(*podUse); !ok || u.name != fmt.Sprintf("p%d", i) {
			t.Errorf("item %d: %#v, want the kept p%d", i, it.Object, i)
		}
	}
	if diff := cmp.Diff([]string{"p0", "p1", "p2", "p3"}, kept); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	sent, fail = nil, 1
	if _, err := listKept(context.Background(), metav1.ListOptions{}, list, keep); err == nil || err.Error() != "page lost" {
		t.Errorf("a lost page: got %v, want its error", err)
	}
}

// A whole PV is kept as a copy off its page, a stub for the others.
func TestKeepPV(t *testing.T) {
	page := &v1.PersistentVolumeList{Items: []v1.PersistentVolume{{ObjectMeta: metav1.ObjectMeta{Name: "in-tree"},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{"10.0.0.1:6789"}, RBDImage: "img"}}}}}}
	got := keepPV(&page.Items[0])
	pv, ok := got.(*v1.PersistentVolume)
	if !ok || pv == &page.Items[0] || pv.Name != "in-tree" {
		t.Errorf("an in-tree PV: kept %T %p (page item %p), want a copy", got, got, &page.Items[0])
	}
}

// A listed claim bound to a PV kept as a stub is not kept; one bound to a
// whole PV, or not bound, is kept as a copy off its page.
func TestKeepUserClaims(t *testing.T) {
	c := &Controller{}
	c.pvStore = cache.NewStore(cache.MetaNamespaceKeyFunc)
	holdPVs(t, c)
	page := &v1.PersistentVolumeClaimList{Items: []v1.PersistentVolumeClaim{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "old"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "in-tree"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "native"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pending"}},
	}}
	var kept []string
	for i := range page.Items {
		if k := c.keepUser(&page.Items[i]); k != nil {
			pvc, ok := k.(*v1.PersistentVolumeClaim)
			if !ok || pvc == &page.Items[i] {
				t.Fatalf("claim %s kept as %T %p (page item %p), want a copy", page.Items[i].Name, k, k, &page.Items[i])
			}
			kept = append(kept, pvc.Name)
		}
	}
	if diff := cmp.Diff([]string{"old", "pending"}, kept); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
}

// A listed pod is kept while it names a claim the controller holds; one
// that names none, or only claims a list left out, is not, and the pods of
// such a claim are the API server's to give (apply.ErrNotCached): a PV
// held as a stub may later become one the controller acts on.
func TestKeepUserPods(t *testing.T) {
	c := &Controller{}
	c.pvStore = cache.NewStore(cache.MetaNamespaceKeyFunc)
	c.podIndex = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{claimIndex: podClaimKeys})
	holdPVs(t, c)
	for _, pvc := range []*v1.PersistentVolumeClaim{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "old"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "in-tree"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "native"}},
	} {
		c.keepUser(pvc)
	}
	pod := func(name string, claims ...string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: v1.PodSpec{NodeName: "n1"}}
		for _, cl := range claims {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: cl, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: cl}}})
		}
		return p
	}
	var kept []string
	for _, p := range []*v1.Pod{pod("uses-old", "old"), pod("uses-new", "new"), pod("uses-both", "new", "old"), pod("none"), pod("unknown-claim", "later")} {
		if k := c.keepUser(p); k != nil {
			if err := c.podIndex.Add(k); err != nil {
				t.Fatal(err)
			}
			kept = append(kept, k.(*podUse).name)
		}
	}
	if diff := cmp.Diff([]string{"uses-old", "uses-both", "unknown-claim"}, kept); diff != "" {
		t.Errorf("pods kept (-want +got):\n%s", diff)
	}
	got, err := c.podsUsing("ns", "old")
	if err != nil || len(got) != 2 {
		t.Errorf("pods using ns/old: %v %v, want uses-old and uses-both", got, err)
	}
	if _, err := c.podsUsing("ns", "new"); !errors.Is(err, apply.ErrNotCached) {
		t.Errorf("pods using ns/new (left out): %v, want apply.ErrNotCached", err)
	}
	if got, err := c.podsUsing("ns", "later"); err != nil || len(got) != 1 {
		t.Errorf("pods using ns/later: %v %v, want unknown-claim", got, err)
	}
}

// holdPVs gives c's PV store an in-tree PV, "in-tree" (kept whole), and a
// CSI PV of Ceph CSI, "native" (held as a stub).
func holdPVs(t *testing.T, c *Controller) {
	t.Helper()
	whole := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "in-tree"},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{"10.0.0.1:6789"}, RBDImage: "img"}}}}
	native := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "native"}, Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
		CSI: &v1.CSIPersistentVolumeSource{Driver: plugin.RBDDriverName, VolumeHandle: "0001-0024-b7f67366-bb43-f32e-07d8-a261a7840da9-0000000000000002-6f1c0000-4b53-9a61-2b0c-1d9a7e110000"}}}}
	for _, pv := range []*v1.PersistentVolume{whole, native} {
		obj, _ := trimPV(pv)
		if err := c.pvStore.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
}

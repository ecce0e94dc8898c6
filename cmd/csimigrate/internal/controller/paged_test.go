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

package input

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pagesOf is a Lister of kind what with pages pages, each one object
// "what/N"; fail, when set, is the error of its list's page failAt.
func pagesOf(what string, pages int, failAt int, fail error) Lister {
	return Lister{what, func(ctx context.Context, o metav1.ListOptions) (string, func(Sink) int, error) {
		at := 0
		if o.Continue != "" {
			at, _ = strconv.Atoi(o.Continue)
		}
		if fail != nil && at == failAt {
			return "", nil, fail
		}
		cont := ""
		if at+1 < pages {
			cont = strconv.Itoa(at + 1)
		}
		return cont, func(s Sink) int { s.Add(fmt.Sprintf("%s/%d", what, at)); return 1 }, nil
	}}
}

// The pages fetched in two streams come each kind in order, every page
// once, each kind's last marked last, and the PVs after every other kind.
func TestFetchPages(t *testing.T) {
	srcs := []Lister{pagesOf("storageclasses", 1, 0, nil), pagesOf("persistentvolumeclaims", 5, 0, nil), pagesOf("pods", 4, 0, nil),
		pagesOf("nodes", 3, 1, errors.New("forbidden")), pagesOf("secrets", 2, 0, nil), pagesOf("persistentvolumes", 3, 0, nil)}
	out := make(chan fetched, 2)
	go fetchPages(context.Background(), srcs, out)
	got := map[string][]string{}
	var lastOf []string
	var order []string
	for f := range out {
		what := srcs[f.src].What
		if f.err != nil {
			got[what] = append(got[what], "error "+f.err.Error())
			continue
		}
		var rec recordingSink
		f.add(&rec)
		for _, o := range rec.added {
			got[what] = append(got[what], o.(string))
			order = append(order, what)
		}
		if f.last {
			lastOf = append(lastOf, what)
		}
	}
	want := map[string][]string{
		"storageclasses":         {"storageclasses/0"},
		"persistentvolumeclaims": {"persistentvolumeclaims/0", "persistentvolumeclaims/1", "persistentvolumeclaims/2", "persistentvolumeclaims/3", "persistentvolumeclaims/4"},
		"pods":                   {"pods/0", "pods/1", "pods/2", "pods/3"},
		"nodes":                  {"nodes/0", "error forbidden"},
		"secrets":                {"secrets/0", "secrets/1"},
		"persistentvolumes":      {"persistentvolumes/0", "persistentvolumes/1", "persistentvolumes/2"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
	if slices.Index(order, "persistentvolumes") != len(order)-3 {
		t.Errorf("the PVs are not the last pages: %v", order)
	}
	if diff := cmp.Diff(len(srcs)-1, len(lastOf)); diff != "" {
		t.Errorf("kinds ended with a last page (-want +got): %s (%v)", diff, lastOf)
	}
}

// fetchPages stops and closes its channel when its context ends, though
// nothing reads it.
func TestFetchPagesStops(t *testing.T) {
	srcs := []Lister{pagesOf("persistentvolumeclaims", 1000, 0, nil), pagesOf("pods", 1000, 0, nil), pagesOf("persistentvolumes", 1000, 0, nil)}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan fetched)
	done := make(chan struct{})
	go func() { fetchPages(ctx, srcs, out); close(done) }()
	<-out
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("fetchPages did not stop when its context ended")
	}
}

// recordingSink keeps what it is handed and the kinds it is told were
// listed.
type recordingSink struct {
	added  []any
	listed []string
}

func (r *recordingSink) Add(obj any)            { r.added = append(r.added, obj) }
func (r *recordingSink) Listed(resource string) { r.listed = append(r.listed, resource) }

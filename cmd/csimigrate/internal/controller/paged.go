package controller

import (
	"context"
	"hash/maphash"
	"maps"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/csimigrate/csimigrate/apply"
)

// listPage is how many objects a list of the controller's informers reads
// at a time.
const listPage = 2000

// pagedLister is the ListerWatcher of an informer that keeps stubs: its
// list reads the API server a page at a time and turns each page's
// objects into what the informer keeps (keep) before it reads the next,
// so that an initial list of 120,000 PVs or pods never holds them whole
// at once (a reflector's own list holds every page until its store is
// replaced, and only then applies the informer's transform). A list is a
// consistent read (resourceVersion ""), paged with its continue token, at
// the resourceVersion of its first page, from which the reflector then
// watches. Watches are as the client makes them (each event's object goes
// through the transform).
func pagedLister[L runtime.Object](client any, list func(context.Context, metav1.ListOptions) (L, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), keep func(runtime.Object) runtime.Object) cache.ListerWatcher {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return listKept(ctx, opts, list, keep)
		},
		WatchFuncWithContext: watchFn,
		// It pages itself.
		DisableChunking: true,
	}
	return cache.ToListWatcherWithWatchListSemantics(lw, client)
}

// listKept lists every page and keeps of each object what keep returns
// (nil: nothing).
func listKept[L runtime.Object](ctx context.Context, opts metav1.ListOptions, list func(context.Context, metav1.ListOptions) (L, error),
	keep func(runtime.Object) runtime.Object) (runtime.Object, error) {
	opts.ResourceVersion, opts.ResourceVersionMatch, opts.Limit, opts.Continue = "", "", listPage, ""
	out := &metav1.List{}
	for {
		page, err := list(ctx, opts)
		if err != nil {
			return nil, err
		}
		lm, err := meta.ListAccessor(page)
		if err != nil {
			return nil, err
		}
		if out.ResourceVersion == "" {
			out.ResourceVersion = lm.GetResourceVersion()
		}
		err = meta.EachListItem(page, func(o runtime.Object) error {
			if k := keep(o); k != nil {
				out.Items = append(out.Items, runtime.RawExtension{Object: k})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if lm.GetContinue() == "" {
			return out, nil
		}
		opts.Continue = lm.GetContinue()
	}
}

// keepPV is what the PV informer keeps of a listed PV: a stub, or a copy
// of the PV off its page (a pointer into the page would keep the page's
// every PV).
func keepPV(o runtime.Object) runtime.Object {
	pv, ok := o.(*v1.PersistentVolume)
	if !ok {
		return o
	}
	if !apply.KeptWhole(pv) {
		return newPVStub(pv)
	}
	cp := *pv
	return &cp
}

// keepUser is what the claims' and pods' informer keeps of a listed
// object (trimUser), off its page. A claim bound to a PV kept as a stub is
// not kept at all, nor a pod that names no claim or only such claims:
// nothing reads those but the writer, which reads a claim its lister does
// not hold, and the pods of a claim left out (unheld), from the API server.
// One that changes later arrives by the watch, as a stub.
func (c *Controller) keepUser(o runtime.Object) runtime.Object {
	kept, _ := c.trimUser(o)
	switch k := kept.(type) {
	case *v1.PersistentVolumeClaim:
		cp := *k
		return &cp
	case *claimStub:
		c.unheld.add(k.namespace() + "/" + k.name)
		return nil
	case *podUse:
		if !slices.ContainsFunc(k.claims, func(cl string) bool { return !c.unheld.has(k.namespace() + "/" + cl) }) {
			return nil
		}
		return k
	case runtime.Object:
		return k
	}
	return o
}

// claimHashes is a set of claims ("namespace/name") by hash: 8 bytes a
// claim, where a large cluster has a claim for every volume. Two claims of
// one hash make the writer read the other's pods from the API server too:
// the safe side. It is safe for concurrent use.
type claimHashes struct {
	mu sync.Mutex
	m  map[uint64]struct{}
}

func (h *claimHashes) add(key string) {
	h.mu.Lock()
	if h.m == nil {
		h.m = map[uint64]struct{}{}
	}
	h.m[maphash.String(keySeed, key)] = struct{}{}
	h.mu.Unlock()
}

func (h *claimHashes) has(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.m[maphash.String(keySeed, key)]
	return ok
}

// The stubs are runtime.Objects, as a list's items are: a kind they do
// not name, and their deep copies.

func (s *pvStub) GetObjectKind() schema.ObjectKind    { return schema.EmptyObjectKind }
func (s *claimStub) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (u *podUse) GetObjectKind() schema.ObjectKind    { return schema.EmptyObjectKind }

func (m stubMeta) deepCopy() stubMeta {
	if m.extra != nil {
		e := *m.extra
		if e.deletion != nil {
			d := *e.deletion
			e.deletion = &d
		}
		e.labels = maps.Clone(e.labels)
		m.extra = &e
	}
	return m
}

func (s *pvStub) DeepCopyObject() runtime.Object {
	cp := *s
	cp.stubMeta = s.stubMeta.deepCopy()
	return &cp
}

func (s *claimStub) DeepCopyObject() runtime.Object {
	cp := *s
	cp.stubMeta = s.stubMeta.deepCopy()
	return &cp
}

func (u *podUse) DeepCopyObject() runtime.Object {
	cp := *u
	cp.stubMeta = u.stubMeta.deepCopy()
	cp.claims = slices.Clone(u.claims)
	return &cp
}

var _ = []runtime.Object{&pvStub{}, &claimStub{}, &podUse{}}

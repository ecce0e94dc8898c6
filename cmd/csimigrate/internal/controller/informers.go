package controller

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/rewrite"
)

// informers builds the informers the controller watches and the writer
// reads from: PVs, StorageClasses, CSIDrivers, claims, pods (as stubs where
// the controller does not act: stubs.go), VolumeAttachments, and the
// writer's state in its namespace.
func (c *Controller) informers() (*apply.Listers, error) {
	c.factory = informers.NewSharedInformerFactoryWithOptions(c.client, 10*time.Minute, informers.WithTransform(trimPV))
	c.userInf = informers.NewSharedInformerFactoryWithOptions(c.client, 10*time.Minute, informers.WithTransform(c.trimUser))
	c.podInf = informers.NewSharedInformerFactoryWithOptions(c.client, 10*time.Minute, informers.WithTransform(c.trimUser))
	c.stateInf = informers.NewSharedInformerFactoryWithOptions(c.client, 10*time.Minute, informers.WithNamespace(c.o.Writer.StateNamespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = "app.kubernetes.io/managed-by=csimigrate" }))
	// No namespace index for PVs (cluster-scoped: one set of every key);
	// claims by namespace and name only; pods by the claims they name.
	// Each list is paged and kept as stubs page by page (pagedLister).
	pvInf := c.factory.InformerFor(&v1.PersistentVolume{}, func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		pvs := client.CoreV1().PersistentVolumes()
		return cache.NewSharedIndexInformer(pagedLister(client, pvs.List, pvs.Watch, keepPV), &v1.PersistentVolume{}, resync, cache.Indexers{})
	})
	claimInf := c.userInf.InformerFor(&v1.PersistentVolumeClaim{}, func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		claims := client.CoreV1().PersistentVolumeClaims(metav1.NamespaceAll)
		return cache.NewSharedIndexInformer(pagedLister(client, claims.List, claims.Watch, c.keepUser), &v1.PersistentVolumeClaim{}, resync, cache.Indexers{})
	})
	podInf := c.podInf.InformerFor(&v1.Pod{}, func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		pods := client.CoreV1().Pods(metav1.NamespaceAll)
		return cache.NewSharedIndexInformer(pagedLister(client, pods.List, pods.Watch, c.keepUser), &v1.Pod{}, resync, cache.Indexers{claimIndex: podClaimKeys})
	})
	scInf := c.factory.Storage().V1().StorageClasses()
	drvInf := c.factory.Storage().V1().CSIDrivers()
	vaInf := c.factory.Storage().V1().VolumeAttachments()
	cmInf := c.stateInf.Core().V1().ConfigMaps()
	c.pvStore, c.claimStore, c.podIndex = pvInf.GetStore(), claimInf.GetStore(), podInf.GetIndexer()
	c.pvs, c.claims = pvLister{c.pvStore}, claimLister{c.claimStore}
	c.classes, c.drivers, c.states = scInf.Lister(), drvInf.Lister(), cmInf.Lister()
	// The PVs first: a claim's stub is decided by its PV (trimUser).
	c.syncedFirst = []cache.InformerSynced{pvInf.HasSynced, scInf.Informer().HasSynced, drvInf.Informer().HasSynced, cmInf.Informer().HasSynced, vaInf.Informer().HasSynced}
	c.claimsSynced, c.podsSynced = []cache.InformerSynced{claimInf.HasSynced}, []cache.InformerSynced{podInf.HasSynced}
	if err := c.watch(pvInf, scInf.Informer(), drvInf.Informer(), cmInf.Informer()); err != nil {
		return nil, err
	}
	if err := c.watchUsers(claimInf, vaInf.Informer(), podInf); err != nil {
		return nil, err
	}
	return &apply.Listers{PVs: c.pvs, Claims: c.claims, PodsUsing: c.podsUsing, PVsNaming: c.pvsNaming, VolumeAttachments: vaInf.Lister(), States: c.states}, nil
}

// trimPV is the transform of the main informers: it keeps a PV a
// direction may act on whole (apply.KeptWhole) and the others as stubs,
// and a VolumeAttachment as trimAttachment does. Being an informer's transform, it is applied as
// objects stream in (a watch list's initial events, or each page of a
// list).
func trimPV(obj any) (any, error) {
	switch o := obj.(type) {
	case *v1.PersistentVolume:
		if !apply.KeptWhole(o) {
			return newPVStub(o), nil
		}
	case *storagev1.VolumeAttachment:
		return trimAttachment(o), nil
	}
	return obj, nil
}

// trimAttachment keeps of a VolumeAttachment what the online-safety check
// and the controller read: its name, attacher, node and PV, and whether it
// is attached (a large cluster has one for every attached volume).
func trimAttachment(va *storagev1.VolumeAttachment) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: va.Name, UID: va.UID, ResourceVersion: va.ResourceVersion, DeletionTimestamp: va.DeletionTimestamp},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: intern(va.Spec.Attacher), NodeName: intern(va.Spec.NodeName),
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: va.Spec.Source.PersistentVolumeName}},
		Status: storagev1.VolumeAttachmentStatus{Attached: va.Status.Attached}}
}

// trimUser keeps a claim bound to a PV the controller keeps whole (or not
// bound yet) with its metadata trimmed (trimMeta), every other claim as a
// stub, and every pod as what the in-use check reads (podUse).
func (c *Controller) trimUser(obj any) (any, error) {
	switch o := obj.(type) {
	case *v1.Pod:
		return newPodUse(o), nil
	case *v1.PersistentVolumeClaim:
		if o.Spec.VolumeName != "" {
			if cur, ok, _ := c.pvStore.GetByKey(o.Spec.VolumeName); !ok || !isWholePV(cur) {
				return newClaimStub(o), nil
			}
		}
		trimMeta(&o.ObjectMeta)
		return o, nil
	}
	return obj, nil
}

func isWholePV(obj any) bool {
	_, ok := obj.(*v1.PersistentVolume)
	return ok
}

// trimMeta drops, in place, the contents of an object's managed fields
// (keeping each entry's manager, operation and subresource) and kubectl's
// last-applied copy.
func trimMeta(m *metav1.ObjectMeta) {
	for i := range m.ManagedFields {
		e := &m.ManagedFields[i]
		e.FieldsV1, e.Time, e.FieldsType = nil, nil, ""
	}
	if _, ok := m.Annotations[v1.LastAppliedConfigAnnotation]; ok {
		a := make(map[string]string, len(m.Annotations)-1)
		for k, v := range m.Annotations {
			if k != v1.LastAppliedConfigAnnotation {
				a[k] = v
			}
		}
		m.Annotations = a
	}
}

// claimIndex indexes pods by the claims they name ("namespace/claim").
const claimIndex = "claim"

func podClaimKeys(obj any) ([]string, error) {
	u, ok := obj.(*podUse)
	if !ok || len(u.claims) == 0 {
		return nil, nil
	}
	keys := make([]string, len(u.claims))
	for i, cl := range u.claims {
		keys[i] = u.namespace() + "/" + cl
	}
	return keys, nil
}

// podsUsing answers the writer's in-use check from the pods' index; for a
// claim whose listed pods were left out (unheld), apply.ErrNotCached, so
// that the writer reads them from the API server.
func (c *Controller) podsUsing(ns, claim string) ([]v1.Pod, error) {
	if c.unheld.has(ns + "/" + claim) {
		return nil, fmt.Errorf("the pods of claim %s/%s: %w", ns, claim, apply.ErrNotCached)
	}
	objs, err := c.podIndex.ByIndex(claimIndex, ns+"/"+claim)
	if err != nil {
		return nil, err
	}
	out := make([]v1.Pod, 0, len(objs))
	for _, o := range objs {
		if u, ok := o.(*podUse); ok {
			out = append(out, u.pod())
		}
	}
	return out, nil
}

// pvsNaming answers the adoption's check that no other PV names an image:
// the PVs, whole or stubs, that name the volume key.
func (c *Controller) pvsNaming(key string) ([]string, error) {
	var out []string
	h := volumeKeyHash(key)
	for _, o := range c.pvStore.List() {
		switch pv := o.(type) {
		case *pvStub:
			if pv.keyed && pv.key == h {
				out = append(out, pv.name)
			}
		case *v1.PersistentVolume:
			if k, ok := rewrite.VolumeKey(pv); ok && k == key {
				out = append(out, pv.Name)
			}
		}
	}
	return out, nil
}

// binding is what the controller reads of a claim, whole or a stub.
func (c *Controller) binding(ns, name string) (uid types.UID, volumeName string, deleting, ok bool) {
	obj, ok, err := c.claimStore.GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return "", "", false, false
	}
	switch pvc := obj.(type) {
	case *v1.PersistentVolumeClaim:
		return pvc.UID, pvc.Spec.VolumeName, pvc.DeletionTimestamp != nil, true
	case *claimStub:
		return pvc.GetUID(), pvc.volumeName, pvc.deletion() != nil, true
	}
	return "", "", false, false
}

// watchUsers looks again at a PV left as it is when what uses it changes:
// a pod of its claim finished or went away, its claim changed, or a
// VolumeAttachment of it appeared or changed (the online-safety check),
// instead of waiting for the recheck.
func (c *Controller) watchUsers(claims, vas, pods cache.SharedIndexInformer) error {
	_, err := claims.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			switch pvc := obj.(type) {
			case *v1.PersistentVolumeClaim:
				c.enqueueBlockedPV(pvc.Spec.VolumeName)
			case *claimStub:
				c.enqueueBlockedPV(pvc.volumeName)
			}
		},
	})
	if err != nil {
		return err
	}
	_, err = vas.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueAttached(obj) },
		UpdateFunc: func(_, obj any) { c.enqueueAttached(obj) },
	})
	if err != nil {
		return err
	}
	_, err = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { c.enqueuePodVolumes(obj) },
		DeleteFunc: func(obj any) { c.enqueuePodVolumes(obj) },
	})
	return err
}

// enqueueBlockedPV looks again at a PV that is left as it is.
func (c *Controller) enqueueBlockedPV(name string) {
	if name == "" {
		return
	}
	c.mu.Lock()
	_, blocked := c.blocked[rewrite.PVRef(name)]
	c.mu.Unlock()
	if blocked {
		c.pvQueue.Add(name)
	}
}

func (c *Controller) enqueueAttached(obj any) {
	if va, ok := obj.(*storagev1.VolumeAttachment); ok && va.Spec.Source.PersistentVolumeName != nil {
		c.enqueueBlockedPV(*va.Spec.Source.PersistentVolumeName)
	}
}

// enqueuePodVolumes looks again at the blocked PVs of a pod's claims.
func (c *Controller) enqueuePodVolumes(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*podUse)
	if !ok {
		return
	}
	for _, claim := range u.claims {
		if _, volume, _, ok := c.binding(u.namespace(), claim); ok {
			c.enqueueBlockedPV(volume)
		}
	}
}

// watch queues what the informers report: PVs and classes as they change,
// everything waiting for a driver when one is registered, and an object
// whose run was interrupted (the PV may exist only in its state).
func (c *Controller) watch(pvs, classes, drivers, states cache.SharedIndexInformer) error {
	_, err := pvs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueuePV(obj) },
		UpdateFunc: func(_, obj any) { c.enqueuePV(obj) },
		DeleteFunc: func(obj any) { c.enqueuePV(obj) },
	})
	if err != nil {
		return err
	}
	_, err = classes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueClass(obj) },
		UpdateFunc: func(_, obj any) { c.enqueueClass(obj) },
		DeleteFunc: func(obj any) { c.enqueueClass(obj) },
	})
	if err != nil {
		return err
	}
	// A driver registered: everything waiting for a driver is looked at.
	_, err = drivers.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { c.enqueueWaiting() }})
	if err != nil {
		return err
	}
	// The writer's state: an object whose run was interrupted (the PV may
	// exist only there) is resumed.
	_, err = states.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueState(obj) },
		UpdateFunc: func(_, obj any) { c.enqueueState(obj) },
	})
	return err
}

// startInformers starts the informers and waits until their caches have
// synced: the PVs' first (a claim is kept whole or as a stub by its PV),
// then the claims' (a listed pod is left out by its claims), then the
// pods'; stop shuts them down.
func (c *Controller) startInformers(ctx context.Context) (stop func(), err error) {
	var started []informers.SharedInformerFactory
	stop = func() {
		for _, f := range started {
			f.Shutdown()
		}
	}
	for _, step := range []struct {
		factories []informers.SharedInformerFactory
		synced    []cache.InformerSynced
	}{{[]informers.SharedInformerFactory{c.factory, c.stateInf}, c.syncedFirst}, {[]informers.SharedInformerFactory{c.userInf}, c.claimsSynced},
		{[]informers.SharedInformerFactory{c.podInf}, c.podsSynced}} {
		for _, f := range step.factories {
			f.Start(ctx.Done())
			started = append(started, f)
		}
		if !cache.WaitForCacheSync(ctx.Done(), step.synced...) {
			return stop, fmt.Errorf("the informers did not sync: %w", ctx.Err())
		}
	}
	return stop, nil
}

func keyOf(obj any) (string, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Key, true
	}
	o, ok := obj.(metav1.Object)
	if !ok {
		return "", false
	}
	return o.GetName(), true
}

func (c *Controller) enqueuePV(obj any) {
	k, ok := keyOf(obj)
	if !ok {
		return
	}
	// A stub is a PV no direction acts on: it is looked at only when the
	// controller has business with it (a run of its own that made it one,
	// or a blocked reason to clear), so that the sync of a large cluster
	// does not queue its every PV ahead of the few in scope.
	stub := obj
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		stub = d.Obj
	}
	if _, ok := stub.(*pvStub); !ok || c.tracked(rewrite.PVRef(k)) {
		c.pvQueue.Add(k)
	}
	// A class waiting for its PVs is looked at again as they change.
	if pv, ok := obj.(*v1.PersistentVolume); ok && pv.Spec.StorageClassName != "" {
		c.mu.Lock()
		waiting := c.blocked[rewrite.ClassRef(pv.Spec.StorageClassName)] == ReasonWaitingForPVs
		c.mu.Unlock()
		if waiting {
			c.scQueue.Add(pv.Spec.StorageClassName)
		}
	}
}

// tracked reports whether the controller has business with obj: a run
// under way, a write of its own not yet seen done, or a reason it is left
// as it is.
func (c *Controller) tracked(obj rewrite.ObjectRef) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, run := c.runs[obj]
	_, blocked := c.blocked[obj]
	return run || blocked || c.started[obj]
}

func (c *Controller) enqueueClass(obj any) {
	if k, ok := keyOf(obj); ok {
		c.scQueue.Add(k)
	}
}

func (c *Controller) enqueueState(obj any) {
	cm, ok := obj.(*v1.ConfigMap)
	if !ok {
		return
	}
	if obj, ok := apply.StateOf(cm); ok {
		c.enqueue(obj)
	}
}

// enqueueWaiting looks again at every object waiting for its driver.
func (c *Controller) enqueueWaiting() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for obj, why := range c.blocked {
		if why != ReasonWaitingForDriver {
			continue
		}
		c.enqueue(obj)
	}
}

// enqueue adds a PV or a StorageClass to its queue.
func (c *Controller) enqueue(obj rewrite.ObjectRef) {
	switch obj.Kind {
	case rewrite.KindPV:
		c.pvQueue.Add(obj.Name)
	case rewrite.KindStorageClass:
		c.scQueue.Add(obj.Name)
	}
}

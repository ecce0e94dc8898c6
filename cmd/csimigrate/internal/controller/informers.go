package controller

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/rewrite"
)

// informers builds the informers the controller watches and the writer
// reads from: PVs, StorageClasses, CSIDrivers, claims, pods (trimmed to
// what the writer's checks read), VolumeAttachments, and the writer's state
// in its namespace.
func (c *Controller) informers() (*apply.Listers, error) {
	c.factory = informers.NewSharedInformerFactoryWithOptions(c.client, 10*time.Minute, informers.WithTransform(trimObject))
	c.podInf = informers.NewSharedInformerFactoryWithOptions(c.client, 10*time.Minute, informers.WithTransform(trimPod))
	c.stateInf = informers.NewSharedInformerFactoryWithOptions(c.client, 10*time.Minute, informers.WithNamespace(c.o.Writer.StateNamespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = "app.kubernetes.io/managed-by=csimigrate" }))
	pvInf := c.factory.Core().V1().PersistentVolumes()
	scInf := c.factory.Storage().V1().StorageClasses()
	drvInf := c.factory.Storage().V1().CSIDrivers()
	claimInf := c.factory.Core().V1().PersistentVolumeClaims()
	vaInf := c.factory.Storage().V1().VolumeAttachments()
	podInf := c.podInf.Core().V1().Pods()
	cmInf := c.stateInf.Core().V1().ConfigMaps()
	c.pvs, c.classes, c.drivers, c.states, c.claims = pvInf.Lister(), scInf.Lister(), drvInf.Lister(), cmInf.Lister(), claimInf.Lister()
	infs := []cache.SharedIndexInformer{pvInf.Informer(), scInf.Informer(), drvInf.Informer(), cmInf.Informer(), claimInf.Informer(), vaInf.Informer(), podInf.Informer()}
	for _, inf := range infs {
		c.synced = append(c.synced, inf.HasSynced)
	}
	if err := c.watch(infs[0], infs[1], infs[2], infs[3]); err != nil {
		return nil, err
	}
	if err := c.watchUsers(claimInf.Informer(), vaInf.Informer(), podInf.Informer()); err != nil {
		return nil, err
	}
	return &apply.Listers{PVs: c.pvs, Claims: c.claims, Pods: podInf.Lister(), VolumeAttachments: vaInf.Lister(), States: c.states}, nil
}

// trimObject keeps of the objects of the controller's main informers what
// it and the writer's checks read: a PV that no direction acts on as
// apply.SlimPV gives it (most PVs of a large cluster: CSI PVs its drivers
// provisioned), a claim without the contents of its managed fields (their
// managers stay, which the keepers' rule reads) and without kubectl's
// last-applied copy. The objects the controller acts on stay whole, and
// every write is made from the API server's copy. Being an informer's
// transform, it is applied as objects stream in, so the initial sync never
// holds the whole objects of the cluster at once.
func trimObject(obj any) (any, error) {
	switch o := obj.(type) {
	case *v1.PersistentVolume:
		return apply.SlimPV(o), nil
	case *v1.PersistentVolumeClaim:
		trimMeta(&o.ObjectMeta)
		return o, nil
	}
	return obj, nil
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

// trimPod keeps of a pod what the writer's checks and the controller read
// (its identity, node, volumes and phase), so that watching every pod costs
// little memory.
func trimPod(obj any) (any, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return obj, nil
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion, DeletionTimestamp: pod.DeletionTimestamp},
		Spec:       v1.PodSpec{NodeName: pod.Spec.NodeName, Volumes: claimVolumes(pod.Spec.Volumes)},
		Status:     v1.PodStatus{Phase: pod.Status.Phase},
	}, nil
}

// claimVolumes are the volumes of a pod that name a claim (what
// rewrite.PodClaims reads): a persistentVolumeClaim volume as it is, a
// generic ephemeral one without its claim template. The others (a
// service account's projected token, config maps, empty dirs) name none.
func claimVolumes(vols []v1.Volume) []v1.Volume {
	n := 0
	for i := range vols {
		if vols[i].PersistentVolumeClaim != nil || vols[i].Ephemeral != nil {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]v1.Volume, 0, n)
	for _, vol := range vols {
		switch {
		case vol.PersistentVolumeClaim != nil:
			out = append(out, v1.Volume{Name: vol.Name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: vol.PersistentVolumeClaim}})
		case vol.Ephemeral != nil:
			out = append(out, v1.Volume{Name: vol.Name, VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}})
		}
	}
	return out
}

// watchUsers looks again at a PV left as it is when what uses it changes:
// a pod of its claim finished or went away, its claim changed, or a
// VolumeAttachment of it appeared or changed (the online-safety check),
// instead of waiting for the recheck.
func (c *Controller) watchUsers(claims, vas, pods cache.SharedIndexInformer) error {
	_, err := claims.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			if pvc, ok := obj.(*v1.PersistentVolumeClaim); ok {
				c.enqueueBlockedPV(pvc.Spec.VolumeName)
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
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	for _, claim := range rewrite.PodClaims(pod.Name, &pod.Spec) {
		if pvc, err := c.claims.PersistentVolumeClaims(pod.Namespace).Get(claim); err == nil {
			c.enqueueBlockedPV(pvc.Spec.VolumeName)
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
// synced; stop shuts them down.
func (c *Controller) startInformers(ctx context.Context) (stop func(), err error) {
	factories := []informers.SharedInformerFactory{c.factory, c.podInf, c.stateInf}
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	stop = func() {
		for _, f := range factories {
			f.Shutdown()
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return stop, fmt.Errorf("the informers did not sync: %w", ctx.Err())
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
	if k, ok := keyOf(obj); ok {
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

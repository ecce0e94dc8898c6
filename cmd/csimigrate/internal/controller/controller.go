// Package controller runs the migration in the cluster: it watches PVs,
// StorageClasses, CSIDrivers and the writer's state, and takes each in-tree
// object in scope through package apply's steps, one write per pass, as soon
// as its CSI driver is registered and the writer's checks allow it. Blocked
// objects are left untouched, with an Event naming the reason's code; what
// remains is counted in metrics and in the status of the CSIMigration
// object "csimigrate".
//
// The controller writes only while its process holds the writer Lease (the
// command's leader election); rewrite -apply takes the same Lease.
package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// Options configure a Controller.
type Options struct {
	// Writer are the options of the writer the controller acts with, and
	// of the one its dry run asks (the same, so that a dry run checks what
	// the real run checks): the state namespace, -online, the write limit,
	// the Ceph and vCenter access of an adoption, the served Ceph entries
	// (CephServed: a Ceph volume waits until its entry is served; nil: not
	// checked) and the writer Lease as this replica holds it (Lease: its
	// leader election's; without it, every write is refused). The
	// controller sets Listers itself, to its informers'. With
	// Writer.DryRun it only reports: each object's writes are sent with
	// server-side dry run, and Events say what would be done (a refusal's
	// code, a reclaim policy kept, WouldMigrate).
	Writer apply.Options
	// Plugins are the in-tree plugins in scope ("kubernetes.io/rbd"); none
	// means every plugin the translator knows.
	Plugins []string
	// PVSelector and ClassSelector narrow the PVs and StorageClasses in
	// scope by their labels; nil means every one.
	PVSelector, ClassSelector labels.Selector
	// Workers is how many objects are worked on at once; 0 means 2.
	Workers int
	// Recheck is how soon an object that is blocked, in use or waiting for
	// its driver is looked at again; 0 means a minute.
	Recheck time.Duration
	// StatusEvery is how often the status object and the gauges are
	// brought up to date; 0 means 5 s.
	StatusEvery time.Duration
	// EventRefresh is how long after its last Event an object still left
	// as it is for the same reason gets its Event again, so that
	// kubectl describe shows it for as long as it lasts (the API server
	// keeps Events for an hour by default, --event-ttl); 0 means 50
	// minutes.
	EventRefresh time.Duration
}

// Controller is the migration controller. Build it with New, run it with
// Run while holding the writer Lease (Options.Lease).
type Controller struct {
	client kubernetes.Interface
	dyn    dynamic.Interface
	tr     *translate.Translator
	logger klog.Logger
	rec    record.EventRecorder
	m      *Metrics
	o      Options
	w      *apply.Writer
	// notices makes the writer's notices Events, for both the writer and
	// the dry run's.
	notices *writerEvents

	factory   informers.SharedInformerFactory
	podInf    informers.SharedInformerFactory
	stateInf  informers.SharedInformerFactory
	claims    corelisters.PersistentVolumeClaimLister
	pvs       corelisters.PersistentVolumeLister
	classes   storagelisters.StorageClassLister
	drivers   storagelisters.CSIDriverLister
	states    corelisters.ConfigMapLister
	synced    []cache.InformerSynced
	pvQueue   workqueue.TypedRateLimitingInterface[string]
	scQueue   workqueue.TypedRateLimitingInterface[string]
	inScope   map[string]bool
	readyOnce sync.Once
	ready     chan struct{}

	mu sync.Mutex
	// blocked maps PVs and StorageClasses to the code of the refusal that
	// leaves them as they are (or a waiting reason).
	blocked map[rewrite.ObjectRef]string
	// said is when each blocked object's Event was last sent.
	said map[rewrite.ObjectRef]time.Time
	// started names the objects this process wrote to and has not seen
	// done yet.
	started map[rewrite.ObjectRef]bool
	// runs are the writer's runs in progress, kept between passes so that
	// a run uses what its own writes returned instead of reading again
	// (the work queue never hands one key to two workers at once).
	runs map[rewrite.ObjectRef]*apply.Run
	// now is the clock (time.Now; a test's own).
	now func() time.Time
}

// run is the writer's run of obj, made by mk when there is none.
func (c *Controller) run(obj rewrite.ObjectRef, mk func() *apply.Run) *apply.Run {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.runs[obj]
	if !ok {
		r = mk()
		c.runs[obj] = r
	}
	return r
}

// endRun drops a run that ended (done, refused or failed): the next pass
// starts afresh from what the cluster shows.
func (c *Controller) endRun(obj rewrite.ObjectRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.runs, obj)
}

// Reasons of the Events the controller emits besides refusal codes.
const (
	ReasonStep             = "MigrationStep"
	ReasonMigrated         = "Migrated"
	ReasonWaitingForDriver = "WaitingForDriver"
	ReasonWouldMigrate     = "WouldMigrate"
	ReasonFailed           = "MigrationFailed"
	ReasonWriteLimit       = "WriteLimitReached"
	// ReasonKeptRetain: the rewritten PV keeps reclaim policy Retain
	// where it had Delete (the writer's KeptRetain), and why.
	ReasonKeptRetain = "ReclaimPolicyKeptRetain"
	// ReasonWaitingForPVs: an in-tree class waits for its in-tree PVs in
	// scope to be rewritten (their rewrite reads the class's deletion
	// secret), as rewrite -apply replaces classes after PVs.
	ReasonWaitingForPVs = "WaitingForPVs"
	// ReasonNoted: a change beyond the translation (access modes
	// narrowed, an adoption's summary) that the writer names.
	ReasonNoted = "MigrationNote"
)

// New builds a Controller; Run starts it. rec receives the Events; dyn
// writes the status object.
func New(client kubernetes.Interface, dyn dynamic.Interface, tr *translate.Translator, logger klog.Logger, rec record.EventRecorder, m *Metrics, o Options) (*Controller, error) {
	if client == nil || dyn == nil || tr == nil || rec == nil || m == nil {
		return nil, errors.New("controller.New: a client, a dynamic client, a translator, an event recorder and metrics are required")
	}
	if o.Writer.StateNamespace == "" {
		o.Writer.StateNamespace = apply.DefaultStateNamespace
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.Recheck <= 0 {
		o.Recheck = time.Minute
	}
	if o.StatusEvery <= 0 {
		o.StatusEvery = 5 * time.Second
	}
	if o.EventRefresh <= 0 {
		o.EventRefresh = 50 * time.Minute
	}
	if o.PVSelector == nil {
		o.PVSelector = labels.Everything()
	}
	if o.ClassSelector == nil {
		o.ClassSelector = labels.Everything()
	}
	inScope := map[string]bool{}
	for _, p := range o.Plugins {
		if !tr.IsMigratableIntreePluginByName(p) {
			var known []string
			for _, k := range tr.Plugins() {
				known = append(known, k.GetInTreePluginName())
			}
			return nil, fmt.Errorf("plugin %q is not one csimigrate migrates (%v)", p, known)
		}
		inScope[p] = true
	}
	c := &Controller{client: client, dyn: dyn, tr: tr, logger: logger, rec: rec, m: m, o: o, inScope: inScope,
		blocked: map[rewrite.ObjectRef]string{}, said: map[rewrite.ObjectRef]time.Time{}, now: time.Now, started: map[rewrite.ObjectRef]bool{}, runs: map[rewrite.ObjectRef]*apply.Run{}, ready: make(chan struct{}),
		pvQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "pvs"}),
		scQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "storageclasses"}),
	}
	listers, err := c.informers()
	if err != nil {
		return nil, err
	}
	// The writer logs its translations' details (once per step): only at
	// higher verbosity. It reads from the informers' caches.
	c.notices = &writerEvents{seen: map[string]bool{}, c: c}
	c.o.Writer.Listers = listers
	c.w, err = apply.New(client, tr, logger.V(4), c.notices, c.o.Writer)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// informers builds the informers the controller watches and the writer
// reads from: PVs, StorageClasses, CSIDrivers, claims, pods (trimmed to
// what the writer's checks read), VolumeAttachments, and the writer's state
// in its namespace.
func (c *Controller) informers() (*apply.Listers, error) {
	c.factory = informers.NewSharedInformerFactory(c.client, 10*time.Minute)
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
		Spec:       v1.PodSpec{NodeName: pod.Spec.NodeName, Volumes: pod.Spec.Volumes},
		Status:     v1.PodStatus{Phase: pod.Status.Phase},
	}, nil
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
	for _, vol := range pod.Spec.Volumes {
		if vol.PersistentVolumeClaim == nil {
			continue
		}
		if pvc, err := c.claims.PersistentVolumeClaims(pod.Namespace).Get(vol.PersistentVolumeClaim.ClaimName); err == nil {
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

// Ready is closed once the informers have synced.
func (c *Controller) Ready() <-chan struct{} { return c.ready }

// Run starts the informers and the workers and keeps the status up to date
// until ctx ends; then it lets the workers finish the write they are in and
// returns. Call it while holding the writer Lease.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer c.pvQueue.ShutDown()
	defer c.scQueue.ShutDown()
	stop, err := c.startInformers(ctx)
	defer stop()
	if err != nil {
		return err
	}
	c.readyOnce.Do(func() { close(c.ready) })
	c.logger.Info("Controller started", "stateNamespace", c.o.Writer.StateNamespace, "dryRun", c.o.Writer.DryRun, "online", c.o.Writer.Online)
	var wg sync.WaitGroup
	for range c.o.Workers {
		wg.Add(2)
		go func() { defer wg.Done(); wait.UntilWithContext(ctx, c.pvWorker, time.Second) }()
		go func() { defer wg.Done(); wait.UntilWithContext(ctx, c.classWorker, time.Second) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); wait.UntilWithContext(ctx, c.updateStatus, c.o.StatusEvery) }()
	<-ctx.Done()
	c.pvQueue.ShutDown()
	c.scQueue.ShutDown()
	wg.Wait()
	c.logger.Info("Controller stopped")
	return nil
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

func (c *Controller) pvWorker(ctx context.Context) {
	for c.next(ctx, c.pvQueue, c.syncPV) {
	}
}

func (c *Controller) classWorker(ctx context.Context) {
	for c.next(ctx, c.scQueue, c.syncClass) {
	}
}

// next works on one key: a sync returns when to look again (0: not
// needed) or an error (backed off).
func (c *Controller) next(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) (time.Duration, bool, error)) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	after, now, err := sync(ctx, key)
	switch {
	case err != nil:
		c.logger.Error(err, "Sync failed; backing off", "queue", q, "name", key)
		q.AddRateLimited(key)
	case now:
		q.Forget(key)
		q.Add(key)
	case after > 0:
		q.Forget(key)
		q.AddAfter(key, after)
	default:
		q.Forget(key)
	}
	return true
}

// pvPlugin is the in-tree plugin of a PV in scope, or "".
func (c *Controller) pvInScope(pv *v1.PersistentVolume) bool {
	if pv == nil {
		return false
	}
	if kind, _ := rewrite.KindOf(c.tr, pv); kind != rewrite.KindInTree {
		return false
	}
	if len(c.inScope) > 0 && !c.inScope[plugin.InTreeNameOfPV(pv)] {
		return false
	}
	return c.o.PVSelector.Matches(labels.Set(pv.Labels))
}

// inTreePVsOf names the in-tree PVs in scope of the StorageClass name,
// sorted.
func (c *Controller) inTreePVsOf(name string) []string {
	pvs, err := c.pvs.List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []string
	for _, pv := range pvs {
		if pv.Spec.StorageClassName == name && c.pvInScope(pv) {
			out = append(out, pv.Name)
		}
	}
	slices.Sort(out)
	return out
}

// classInScope reports whether a StorageClass is an in-tree class in scope.
func (c *Controller) classInScope(sc *storagev1.StorageClass) bool {
	if rewrite.ClassKindOf(c.tr, sc) != rewrite.KindInTree {
		return false
	}
	if len(c.inScope) > 0 && !c.inScope[rewrite.InTreeClass(sc).Provisioner] {
		return false
	}
	return c.o.ClassSelector.Matches(labels.Set(sc.Labels))
}

// setBlocked records why obj is left as it is ("" when it is not). It
// reports whether to say so in an Event: the reason changed, or it was
// last said Options.EventRefresh ago (before the API server's Event TTL
// removes it).
func (c *Controller) setBlocked(obj rewrite.ObjectRef, why string) (say bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.blocked[obj] == why && (why == "" || now.Sub(c.said[obj]) < c.o.EventRefresh) {
		return false
	}
	if why == "" {
		delete(c.blocked, obj)
		delete(c.said, obj)
	} else {
		c.blocked[obj], c.said[obj] = why, now
	}
	return true
}

// driverRegistered reports whether a CSIDriver object exists for driver.
func (c *Controller) driverRegistered(driver string) (bool, error) {
	_, err := c.drivers.Get(driver)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// syncPV takes one step of a PV's rewrite, when it is in scope (or its
// rewrite is under way).
func (c *Controller) syncPV(ctx context.Context, name string) (time.Duration, bool, error) {
	obj := rewrite.PVRef(name)
	pv, err := c.pvs.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, false, err
	}
	if apierrors.IsNotFound(err) {
		pv = nil
	}
	_, stateErr := c.states.ConfigMaps(c.o.Writer.StateNamespace).Get(apply.StateName(name))
	underWay := stateErr == nil
	if pv != nil && !underWay {
		if _, pending := pv.Annotations[rewrite.AnnReclaimPolicy]; pending && pv.Spec.CSI != nil {
			underWay = true // created, its reclaim policy not yet restored
		}
	}
	if !underWay && !c.pvInScope(pv) {
		c.endRun(obj)
		c.setBlocked(obj, "")
		if pv != nil {
			c.doneWith(obj, pv)
		}
		return 0, false, nil
	}
	if !underWay && c.bindingInFlight(pv) {
		// kube-controller-manager is completing the binding: its status
		// write would change the PV under the rewrite's first step, whose
		// saved state would then no longer prove what it resumes. Its
		// update brings the PV back here.
		return time.Second, false, nil
	}
	if !underWay {
		driver, _, err := c.identity(pv)
		if err != nil {
			return 0, false, err
		}
		ok, err := c.driverRegistered(driver)
		if err != nil {
			return 0, false, err
		}
		if !ok {
			if c.setBlocked(obj, ReasonWaitingForDriver) {
				c.event(pv, v1.EventTypeNormal, ReasonWaitingForDriver, "waiting for the CSI driver "+driver+" to be registered (a CSIDriver object) before the rewrite")
			}
			return c.o.Recheck, false, nil
		}
		if c.o.Writer.DryRun {
			return c.dryRunPV(ctx, pv)
		}
	}
	p, err := c.run(obj, func() *apply.Run { return c.w.PV(apply.Target{Name: name}) }).Step(ctx)
	return c.outcome(obj, pv, p, err)
}

// bindingInFlight reports whether pv and its claim name each other (by
// uid and volumeName) but kube-controller-manager has not yet marked the
// PV Bound: a PV just created pre-bound, whose status is about to change.
func (c *Controller) bindingInFlight(pv *v1.PersistentVolume) bool {
	if pv == nil || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID == "" || pv.Status.Phase == v1.VolumeBound {
		return false
	}
	ref := pv.Spec.ClaimRef
	pvc, err := c.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	return err == nil && pvc.UID == ref.UID && pvc.Spec.VolumeName == pv.Name && pvc.DeletionTimestamp == nil
}

// identity is the CSI driver and handle of an in-tree PV's translation.
func (c *Controller) identity(pv *v1.PersistentVolume) (string, string, error) {
	csi, err := c.tr.TranslateInTreePVToCSI(c.logger, pv)
	if err != nil {
		return "", "", err
	}
	if csi.Spec.CSI == nil {
		return "", "", errors.New("the translation has no CSI source")
	}
	return csi.Spec.CSI.Driver, csi.Spec.CSI.VolumeHandle, nil
}

// outcome reports one step and says when to look again.
func (c *Controller) outcome(obj rewrite.ObjectRef, cur any, p apply.Progress, err error) (time.Duration, bool, error) {
	if err != nil || p.Done {
		c.endRun(obj)
	}
	var ref *rewrite.Refusal
	switch {
	case errors.Is(err, apply.ErrWriteLimit):
		if c.setBlocked(obj, ReasonWriteLimit) {
			c.event(cur, v1.EventTypeWarning, ReasonWriteLimit, "not written: the controller's write limit is reached (-max-writes); another writer finishes it")
		}
		return 0, false, nil
	case errors.As(err, &ref):
		c.mu.Lock()
		again := c.blocked[obj] == string(ref.Code)
		c.mu.Unlock()
		if c.setBlocked(obj, string(ref.Code)) {
			c.logger.Info("Left as it is", "object", obj.Resource(), "code", ref.Code, "reason", ref.Reason, "again", again)
			if !again {
				// Counted once per refusal, not per Event sent again.
				c.m.refusals.WithLabelValues(metricKind(obj), string(ref.Code)).Inc()
			}
			msg := "left as it is: " + ref.Reason
			if remedy := remedyOf(ref); remedy != "" {
				msg += "; " + remedy
			}
			c.event(cur, v1.EventTypeWarning, string(ref.Code), msg)
		}
		return c.o.Recheck, false, nil
	case err != nil:
		c.m.failures.WithLabelValues(metricKind(obj)).Inc()
		if c.setBlocked(obj, ReasonFailed) {
			c.event(cur, v1.EventTypeWarning, ReasonFailed, err.Error())
		}
		return 0, false, err
	case p.Done:
		c.setBlocked(obj, "")
		c.doneWith(obj, cur)
		return 0, false, nil
	case p.Wrote != "":
		c.setBlocked(obj, "")
		c.mu.Lock()
		c.started[obj] = true
		c.mu.Unlock()
		c.m.writes.WithLabelValues(metricKind(obj)).Inc()
		c.logger.Info("Wrote", "object", obj.Resource(), "step", p.Wrote)
		c.event(cur, v1.EventTypeNormal, ReasonStep, p.Wrote)
		return 0, true, nil
	}
	return max(p.RequeueAfter, 100*time.Millisecond), false, nil
}

// remedies word the engine's remedies in the controller's terms (its flags
// and what its operator can do); other actions keep the engine's words.
var remedies = map[plugin.Action]func(object, engine string) string{
	plugin.ActionStopPods: func(string, string) string {
		return "stop them (scale their workloads to zero); the controller rewrites it then, or at once when it runs with -online and the plugin is already migrated on their nodes"
	},
	plugin.ActionCreateSecret: func(_, engine string) string {
		return engine + " (csimigrate plan lists it under SECRETS)"
	},
	plugin.ActionAddCephEntry: func(_, engine string) string {
		return engine + " (csimigrate plan -live prints it, as the deployment keeps it); the controller rewrites the volume once the driver serves it"
	},
}

// remedyOf is a refusal's remedy in the controller's words.
func remedyOf(r *rewrite.Refusal) string {
	if word, ok := remedies[r.Action]; ok {
		return word(r.ActsOn, r.Remedy)
	}
	return r.Remedy
}

// doneWith reports an object this process wrote to as migrated.
func (c *Controller) doneWith(obj rewrite.ObjectRef, cur any) {
	c.mu.Lock()
	started := c.started[obj]
	delete(c.started, obj)
	c.mu.Unlock()
	c.logger.V(2).Info("Done", "object", obj.Resource(), "wroteToIt", started)
	if !started {
		return
	}
	c.logger.Info("Migrated", "object", obj.Resource())
	c.m.migrated.WithLabelValues(metricKind(obj)).Inc()
	if obj.Kind == rewrite.KindPV {
		// The lister may still hold the in-tree object, or none (between
		// the old object's deletion and the new one's arrival): name the
		// new one.
		if live, err := c.client.CoreV1().PersistentVolumes().Get(context.Background(), obj.Name, metav1.GetOptions{}); err == nil {
			cur = live
		}
	}
	c.event(cur, v1.EventTypeNormal, ReasonMigrated, "replaced by its CSI form")
}

// metricKind is the kind label of the controller's metrics: "pv" or
// "storageclass".
func metricKind(obj rewrite.ObjectRef) string {
	if obj.Kind == rewrite.KindPV {
		return "pv"
	}
	return "storageclass"
}

// dryRunPV sends the PV's writes with server-side dry run and reports.
func (c *Controller) dryRunPV(ctx context.Context, pv *v1.PersistentVolume) (time.Duration, bool, error) {
	obj := rewrite.PVRef(pv.Name)
	ev := &collect{kept: c.notices.KeptRetain}
	w, err := c.dryRunWriter(ev)
	if err != nil {
		return 0, false, err
	}
	err = w.DryRunPVs(ctx, []apply.Target{{Name: pv.Name}})
	var ref *rewrite.Refusal
	switch {
	case errors.As(err, &ref):
		return c.outcome(obj, pv, apply.Progress{}, ref)
	case err != nil:
		return c.outcome(obj, pv, apply.Progress{}, err)
	}
	if c.setBlocked(obj, ReasonWouldMigrate) {
		c.event(pv, v1.EventTypeNormal, ReasonWouldMigrate, c.wouldMigrate(ev))
	}
	return 0, false, nil
}

// dryRunWriter is a writer of the controller's own options (adoption, the
// served Ceph entries, -online, its listers) reporting to ev: the dry run
// checks what the real run checks.
func (c *Controller) dryRunWriter(ev apply.Events) (*apply.Writer, error) {
	return apply.New(c.client, c.tr, c.logger.V(4), ev, c.o.Writer)
}

// wouldMigrate is a dry run's verdict on an object it would migrate: what
// the writer would do, and the write limit the real run stops at.
func (c *Controller) wouldMigrate(ev *collect) string {
	msg := "dry run: " + ev.String()
	if n := c.o.Writer.MaxWrites; n > 0 {
		msg += fmt.Sprintf(" (the real run stops after %d writes in all, -max-writes: another writer finishes what is left)", n)
	}
	return msg
}

// collect keeps a dry run's notes for its WouldMigrate Event; a reclaim
// policy kept at Retain is also reported as the real run reports it (kept).
type collect struct {
	notes []string
	kept  func(pv rewrite.ObjectRef, why string)
}

func (e *collect) Writing(_ rewrite.ObjectRef, what string) { e.notes = append(e.notes, what) }
func (e *collect) Noted(_ rewrite.ObjectRef, what string)   { e.notes = append(e.notes, what) }
func (e *collect) KeptRetain(pv rewrite.ObjectRef, why string) {
	e.notes = append(e.notes, "kept at "+why)
	if e.kept != nil {
		e.kept(pv, why)
	}
}
func (e *collect) Refused(rewrite.ObjectRef, *rewrite.Refusal) {}
func (e *collect) String() string                              { return strings.Join(e.notes, "; ") }

// syncClass takes one step of a StorageClass's replacement.
func (c *Controller) syncClass(ctx context.Context, name string) (time.Duration, bool, error) {
	obj := rewrite.ClassRef(name)
	sc, err := c.classes.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, false, err
	}
	if apierrors.IsNotFound(err) {
		sc = nil
	}
	_, stateErr := c.states.ConfigMaps(c.o.Writer.StateNamespace).Get(apply.ClassStateName(name))
	underWay := stateErr == nil
	if !underWay && (sc == nil || !c.classInScope(sc)) {
		c.endRun(obj)
		c.setBlocked(obj, "")
		if sc != nil {
			c.doneWith(obj, sc)
		}
		return 0, false, nil
	}
	if !underWay {
		repl, err := rewrite.ClassReplacement(c.tr, c.logger, sc)
		if err != nil {
			return c.outcome(obj, sc, apply.Progress{}, rewrite.Refuse(rewrite.CodeNotTranslatable, "%v", err))
		}
		ok, err := c.driverRegistered(repl.Provisioner)
		if err != nil {
			return 0, false, err
		}
		if !ok {
			if c.setBlocked(obj, ReasonWaitingForDriver) {
				c.event(sc, v1.EventTypeNormal, ReasonWaitingForDriver, "waiting for the CSI driver "+repl.Provisioner+" to be registered (a CSIDriver object) before the class is replaced")
			}
			return c.o.Recheck, false, nil
		}
		if c.o.Writer.DryRun {
			ev := &collect{}
			w, err := c.dryRunWriter(ev)
			if err != nil {
				return 0, false, err
			}
			if err := w.DryRunClasses(ctx, []apply.Target{{Name: name}}); err != nil {
				return c.outcome(obj, sc, apply.Progress{}, err)
			}
			if c.setBlocked(obj, ReasonWouldMigrate) {
				c.event(sc, v1.EventTypeNormal, ReasonWouldMigrate, c.wouldMigrate(ev))
			}
			return 0, false, nil
		}
		if pvs := c.inTreePVsOf(name); len(pvs) > 0 {
			if c.setBlocked(obj, ReasonWaitingForPVs) {
				c.event(sc, v1.EventTypeNormal, ReasonWaitingForPVs, fmt.Sprintf("waiting for its %d in-tree PVs in scope (%s) to be rewritten first: their rewrite reads the deletion secret from this class", len(pvs), strings.Join(pvs[:min(len(pvs), 3)], ", ")))
			}
			return c.o.Recheck, false, nil
		}
	}
	p, err := c.run(obj, func() *apply.Run { return c.w.Class(apply.Target{Name: name}) }).Step(ctx)
	return c.outcome(obj, sc, p, err)
}

// writerEvents makes the writer's notices Events on the PV (and its claim)
// or the StorageClass, once each per process: a reclaim policy kept at
// Retain, access modes narrowed, what an adoption did. Each write and each
// refusal is reported by outcome instead.
type writerEvents struct {
	c    *Controller
	mu   sync.Mutex
	seen map[string]bool
}

func (e *writerEvents) Writing(rewrite.ObjectRef, string)           {}
func (e *writerEvents) Refused(rewrite.ObjectRef, *rewrite.Refusal) {}
func (e *writerEvents) Noted(obj rewrite.ObjectRef, what string) {
	e.notice(obj, v1.EventTypeNormal, ReasonNoted, what)
}
func (e *writerEvents) KeptRetain(pv rewrite.ObjectRef, why string) {
	e.notice(pv, v1.EventTypeWarning, ReasonKeptRetain, "kept at "+why)
}

func (e *writerEvents) notice(obj rewrite.ObjectRef, eventType, reason, msg string) {
	key := obj.Resource() + "\x00" + reason + "\x00" + msg
	e.mu.Lock()
	seen := e.seen[key]
	e.seen[key] = true
	e.mu.Unlock()
	if seen {
		return
	}
	c := e.c
	switch obj.Kind {
	case rewrite.KindPV:
		pv, err := c.pvs.Get(obj.Name)
		if err != nil {
			// Between the old object's deletion and the new one's arrival
			// in the lister.
			if pv, err = c.client.CoreV1().PersistentVolumes().Get(context.Background(), obj.Name, metav1.GetOptions{}); err != nil {
				c.logger.Info("No Event for the writer's notice", "object", obj.Resource(), "reason", reason, "err", err)
				return
			}
		}
		c.event(pv, eventType, reason, msg)
	case rewrite.KindStorageClass:
		if sc, err := c.classes.Get(obj.Name); err == nil {
			c.event(sc, eventType, reason, msg)
		}
	}
}

// event records an Event on the object and, for a bound PV, on its claim.
func (c *Controller) event(obj any, eventType, reason, msg string) {
	switch o := obj.(type) {
	case *v1.PersistentVolume:
		if o == nil {
			return
		}
		c.rec.Event(o, eventType, reason, msg)
		if ref := o.Spec.ClaimRef; ref != nil && ref.Name != "" {
			claim := &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID}
			c.rec.Event(claim, eventType, reason, rewrite.PVRef(o.Name).Resource()+": "+msg)
		}
	case *storagev1.StorageClass:
		if o == nil {
			return
		}
		c.rec.Event(o, eventType, reason, msg)
	}
}

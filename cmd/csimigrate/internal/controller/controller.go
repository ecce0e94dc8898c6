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
	"sync"
	"time"

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

	caches
	queues
	progress
	// now is the clock (time.Now; a test's own).
	now func() time.Time
}

// caches are the informers and the listers the controller and its writer
// read from.
type caches struct {
	factory  informers.SharedInformerFactory
	userInf  informers.SharedInformerFactory // claims
	podInf   informers.SharedInformerFactory
	stateInf informers.SharedInformerFactory
	// pvStore and claimStore hold typed objects and stubs (stubs.go);
	// pvs and claims read them, podIndex holds podUse by claim.
	pvStore    cache.Store
	claimStore cache.Store
	podIndex   cache.Indexer
	claims     corelisters.PersistentVolumeClaimLister
	pvs        corelisters.PersistentVolumeLister
	classes    storagelisters.StorageClassLister
	drivers    storagelisters.CSIDriverLister
	states     corelisters.ConfigMapLister
	// syncedFirst are the informers that sync before the claims' (then
	// claimsSynced) and the pods' (podsSynced) start.
	syncedFirst, claimsSynced, podsSynced []cache.InformerSynced
	// unheld are the claims a list left out (bound to a PV held as a
	// stub), by hash, whose listed pods are left out too (podsUsing).
	unheld claimHashes
	// readyOnce closes ready once the caches have synced.
	readyOnce sync.Once
	ready     chan struct{}
}

// queues are the work: PVs and StorageClasses by name, and the scope.
type queues struct {
	pvQueue workqueue.TypedRateLimitingInterface[string]
	scQueue workqueue.TypedRateLimitingInterface[string]
	inScope map[string]bool
}

// progress is what the controller knows of each object's migration, under
// mu.
type progress struct {
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
	c := &Controller{client: client, dyn: dyn, tr: tr, logger: logger, rec: rec, m: m, o: o, now: time.Now,
		caches: caches{ready: make(chan struct{})},
		queues: queues{inScope: inScope,
			pvQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "pvs"}),
			scQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "storageclasses"})},
		progress: progress{blocked: map[rewrite.ObjectRef]string{}, said: map[rewrite.ObjectRef]time.Time{}, started: map[rewrite.ObjectRef]bool{}, runs: map[rewrite.ObjectRef]*apply.Run{}},
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

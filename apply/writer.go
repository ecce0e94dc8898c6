package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// DefaultStateNamespace is where a Writer keeps its state ConfigMaps and the
// writer Lease unless Options say otherwise.
const DefaultStateNamespace = "kube-system"

// Options configure a Writer.
type Options struct {
	// StateNamespace holds the state ConfigMaps and the writer Lease;
	// "" means DefaultStateNamespace.
	StateNamespace string
	// Direction is what the Writer replaces by what: the rewrite (the
	// zero value), its undo, the adoption of CSI PVs (needs Ceph) or its
	// undo.
	Direction Direction
	// DryRun makes the Writer only check: PVs and Classes run every check
	// and send each write with the API server's server-side dry run
	// (DryRunPVs, DryRunClasses), writing nothing and needing no Lease.
	DryRun bool
	// Online allows rewriting PVs that running pods use where the nodes
	// running them already migrate the plugin (the online-safety rule).
	Online bool
	// Concurrency is how many PVs Writer.PVs rewrites at once (each PV's
	// steps stay in order); 0 means 1.
	Concurrency int
	// MaxWrites stops the Writer before its write after this many
	// (ErrWriteLimit); 0 means no limit. A canary rollout, and how the
	// tests interrupt a run at every step.
	MaxWrites int
	// Ceph, when set, makes the rewrite adopt each in-tree RBD PV's image
	// (and, with CephFSSecret, each CephFS PV's subvolume) into Ceph CSI's
	// journal where package adopt's rules allow it, so that the PV becomes
	// one of the driver's own volumes (a native volume ID: snapshots and
	// clones work); the undo removes the entry again. Without it the
	// rewrite gives RBD PVs their migration handle and CephFS PVs a static
	// volume, and the undo of an adopted PV is refused.
	Ceph Ceph
	// CephConfig is the cluster config the Ceph CSI driver reads, for the
	// RBD rados namespace of a cluster entry (an image in one is not
	// adopted), the entry that serves a CephFS subvolume's group, and the
	// deployment's own entry for the volume's Ceph cluster, which the
	// adopted volume's ID then names (adopt.JoinDeployment: same fsid).
	CephConfig ceph.ClusterConfig
	// CephFSSecret is the Secret with adminID and adminKey that adopted
	// CephFS volumes name for staging, expansion and deletion (Ceph CSI's
	// CephFS driver reads those for its own volumes); nil: CephFS volumes
	// stay static.
	CephFSSecret *v1.SecretReference
	// VSphere, when set, adopts in-tree vSphere PVs' disks: the rewrite
	// registers each disk as a First Class Disk and CNS volume (as the
	// vSphere CSI driver's syncer does) where it is not one, and gives the
	// PV its First Class Disk ID as handle, the form of the driver's own
	// volumes (snapshots work); a disk another PV names keeps its path.
	// The undo of such a PV gives its path back and needs no vCenter
	// access (the disk stays registered).
	VSphere VSphere
	// Listers, when set, answer the Writer's reads of PVs, claims, pods,
	// VolumeAttachments and its state from informers' caches (see
	// Listers).
	Listers *Listers
	// CephServed, when set, reads the cluster entries that Ceph CSI
	// driver driver serves now (as the plan locates them for the
	// cluster's deployment: plan.CephServed.For); the rewrite then leaves
	// an in-tree RBD or CephFS PV, or an RBD class, as it is while the
	// entry its migrated form names is not among them
	// (rewrite.CodeCephEntryMissing). It is called before each such
	// object's first write: one that reads the cluster caches what it
	// read. A *rewrite.Refusal it returns (CodeCephEntryUnchecked: it may
	// not read what it needs; CodeCephCSIConfigNotFound: where the driver
	// reads its entries is not known) leaves the object as it is with
	// that refusal.
	CephServed func(ctx context.Context, driver string) (ceph.ClusterConfig, error)
	// Lease is this process's hold on the writer Lease (LeaseName in
	// StateNamespace): the *Lease HoldLease returns, or a leader
	// elector's on that Lease as a HolderFunc. A Writer takes no write
	// unless it holds (ErrNotHolding); without it, it only reviews.
	Lease Holder
	// SourceChanged are the objects whose keepers' sources (Helm, Flux,
	// Argo CD, the addon manager, an operator: rewrite.KeepersOf) the
	// administrator says hold the new form; any other object such a tool
	// keeps is left as it is (rewrite.KeptRefusal) unless it carries
	// rewrite.AnnSourceChanged.
	SourceChanged rewrite.ChangedSources
}

// A Holder is a process's hold on the writer Lease, which keeps csimigrate's
// writers to one at a time.
type Holder interface {
	// Holding reports whether the process holds the writer Lease now.
	Holding() bool
}

// HolderFunc is a Holder from a function, as a leader elector's IsLeader.
type HolderFunc func() bool

// Holding implements Holder.
func (f HolderFunc) Holding() bool { return f() }

// ErrNotHolding is returned by a Step that would write while the Writer's
// Holder does not hold the writer Lease (or it has none): nothing is
// written.
var ErrNotHolding = errors.New("the writer Lease is not held by this process; nothing was written (one csimigrate writer at a time)")

// ErrDryRun is returned by a Step that would write on a Writer made with
// Options.DryRun: nothing is written.
var ErrDryRun = errors.New("a dry run writes nothing")

// ErrWriteLimit is returned when a Writer reached Options.MaxWrites; the
// objects it left are finished by another run.
var ErrWriteLimit = errors.New("interrupted (write limit reached)")

// ErrNotCached is returned by a cache's Listers.PodsUsing for a claim whose
// pods it does not hold (it left them out as not needed then): the Writer
// then reads the claim's namespace's pods from the API server.
var ErrNotCached = errors.New("not held by the cache")

// Events receives what a Writer does, instead of printing it. Objects are
// named by their rewrite.ObjectRef. Calls are serialised. No call carries a
// Secret's value.
type Events interface {
	// Writing announces the next write to obj, before it is sent; what
	// is the step as docs/rewrite-apply.md words it.
	Writing(obj rewrite.ObjectRef, what string)
	// Noted names a change beyond the translation (access modes) or an
	// outcome that wrote nothing (a dry run's verdict, an object with
	// nothing to do).
	Noted(obj rewrite.ObjectRef, what string)
	// KeptRetain names a PV whose replacement keeps reclaim policy Retain
	// where it had Delete, and why.
	KeptRetain(pv rewrite.ObjectRef, why string)
	// Refused names an object left exactly as it was, and why.
	Refused(obj rewrite.ObjectRef, r *rewrite.Refusal)
}

// NoEvents discards every event.
type NoEvents struct{}

// Writing implements Events.
func (NoEvents) Writing(rewrite.ObjectRef, string) {}

// Noted implements Events.
func (NoEvents) Noted(rewrite.ObjectRef, string) {}

// KeptRetain implements Events.
func (NoEvents) KeptRetain(rewrite.ObjectRef, string) {}

// Refused implements Events.
func (NoEvents) Refused(rewrite.ObjectRef, *rewrite.Refusal) {}

// Target is an object a run acts on: by its name and, when it comes from
// reviewed input, the uid it had there ("" for any).
type Target struct {
	Name string
	UID  types.UID
}

// Writer carries out the rewrite (or its undo) against a live cluster.
// Every Step observes the cluster and takes the next write, so it can be
// run again after an interruption at any point and converges to the same
// state. A Writer is safe for concurrent use. It writes only while its
// Options.Lease holds the writer Lease, so that no other csimigrate writes at
// once.
type Writer struct {
	client kubernetes.Interface
	tr     *translate.Translator
	logger klog.Logger
	events Events
	// o are the Options it was made with, defaults filled in
	// (StateNamespace) and SourceChanged copied; never changed after New.
	o Options

	// listers answer reads from informers' caches where set.
	listers Listers

	mu sync.Mutex // guards what follows, and the events
	// steps counts the writes taken.
	steps int
	// minor is the API server's minor version once read (0 before).
	minor int
	// kept names the PVs rewritten with Retain instead of Delete.
	kept []string
	reads
}

// reads are what the checks read from the cluster, shared by the workers
// for a short while (cacheFor) or, where the cluster cannot change it, for
// the whole run; under the Writer's mu.
type reads struct {
	classes map[string]cached[*storagev1.StorageClass]
	pods    map[string]cached[[]v1.Pod]
	// allPVs are the cluster's PVs with the volume each names, for
	// finding the PVs that share one.
	allPVs cached[[]pvVolume]
	// withState names the PVs that had a state ConfigMap when the run
	// listed them (nil: not listed); a PV not in it needs no read of its
	// ConfigMap before its first write (a ConfigMap created since makes
	// that write fail, and is then read).
	withState map[string]bool
	// secrets are Secrets read for the checks, by "namespace/name", and
	// drivers the names of the cluster's CSIDrivers (key "").
	secrets map[string]cached[*v1.Secret]
	drivers map[string]cached[[]string]
	// fsids are the fsids read at monitor lists (joined by ","), for the
	// whole run: a cluster does not change its fsid.
	fsids map[string]string
}

// New is a Writer that writes through client. events may be nil
// (NoEvents).
func New(client kubernetes.Interface, tr *translate.Translator, logger klog.Logger, events Events, o Options) (*Writer, error) {
	if client == nil || tr == nil {
		return nil, errors.New("apply.New: a client and a translator are required")
	}
	if !o.Direction.valid() {
		return nil, fmt.Errorf("apply.New: Direction %d is none of Rewrite, Undo, AdoptCSI and UnadoptCSI", int(o.Direction))
	}
	if o.Direction.AdoptsCSI() && o.Ceph == nil {
		return nil, fmt.Errorf("apply.New: Direction %s needs Ceph", o.Direction)
	}
	if o.Concurrency < 0 || o.MaxWrites < 0 {
		return nil, fmt.Errorf("apply.New: Concurrency %d and MaxWrites %d must not be negative", o.Concurrency, o.MaxWrites)
	}
	if events == nil {
		events = NoEvents{}
	}
	ns := o.StateNamespace
	if ns == "" {
		ns = DefaultStateNamespace
	}
	o.StateNamespace = ns
	o.SourceChanged = slices.Clone(o.SourceChanged)
	a := &Writer{client: client, tr: tr, logger: logger, events: events, o: o}
	if o.Listers != nil {
		a.listers = *o.Listers
	}
	return a, nil
}

// Writes is how many writes the Writer has taken.
func (a *Writer) Writes() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.steps
}

// Kept names the PVs whose replacement keeps reclaim policy Retain where
// they had Delete, sorted.
func (a *Writer) Kept() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Sorted(slices.Values(a.kept))
}

// IsSource reports whether a PV is one the Writer's direction replaces.
func (a *Writer) IsSource(pv *v1.PersistentVolume) bool { return a.o.Direction.ReplacesPV(a.tr, pv) }

// IsSourceClass reports whether a StorageClass is one the Writer's
// direction replaces (none for the adoption of CSI PVs).
func (a *Writer) IsSourceClass(sc *storagev1.StorageClass) bool {
	return a.o.Direction.ReplacesClass(a.tr, sc)
}

// cached is a value read from the cluster at a time.
type cached[T any] struct {
	v  T
	at time.Time
}

// cacheFor is how long a StorageClass, a Secret or a namespace's pod list is reused
// by the checks of other PVs: long enough for thousands of PVs in a few
// namespaces, short enough that a pod started during a run is seen.
const cacheFor = 5 * time.Second

// takeWrite is the gate of every write: it lets the next write to obj
// through and announces it, or returns
// ErrDryRun for a dry run, ErrNotHolding when this process does not hold
// the writer Lease and ErrWriteLimit when the write limit is reached.
func (a *Writer) takeWrite(obj rewrite.ObjectRef, what string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.o.DryRun {
		return &ObjectError{Object: obj, Err: ErrDryRun}
	}
	if a.o.Lease == nil || !a.o.Lease.Holding() {
		return &ObjectError{Object: obj, Err: ErrNotHolding}
	}
	if a.o.MaxWrites > 0 && a.steps >= a.o.MaxWrites {
		return ErrWriteLimit
	}
	a.steps++
	a.events.Writing(obj, what)
	return nil
}

// keptRetain names a PV rewritten with reclaim policy Retain instead of
// Delete, and why.
func (a *Writer) keptRetain(pv, why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.kept = append(a.kept, pv)
	a.events.KeptRetain(rewrite.PVRef(pv), why)
}

func (a *Writer) note(obj rewrite.ObjectRef, what string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events.Noted(obj, what)
}

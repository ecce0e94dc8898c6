// Package apply is csimigrate's only writer: it replaces in-tree PVs and
// StorageClasses by their CSI forms (and, for the undo, back) in a live
// cluster, one write at a time, with every check before the first write and
// its state kept in the cluster, so that a run interrupted anywhere is
// finished or undone by running it again.
//
// It is handed a kubernetes.Interface and never builds a client; it never
// prints, it reports through Events. A Run advances one object by at most
// one write per Step and says when to look again, so a controller can
// requeue; Writer.PVs and Writer.Classes are the command's loop over them.
// What an object becomes and when it is refused are package rewrite's rules.
package apply

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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/plugin"
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
	// Undo replaces CSI PVs and StorageClasses csimigrate created by what
	// they replaced, instead of the rewrite.
	Undo bool
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
	// AdoptCSI makes the Writer adopt CSI PVs of Ceph CSI's RBD driver
	// that have a migration handle (an earlier rewrite's, or Kubernetes'
	// own migration's), and static CSI PVs of its CephFS driver (with
	// CephFSSecret), instead of rewriting in-tree PVs; with Undo, it gives
	// such adopted PVs their migration handle or static form back. Needs
	// Ceph.
	AdoptCSI bool
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
	// Lease is this process's hold on the writer Lease (LeaseName in
	// StateNamespace): the *Lease HoldLease returns, or a leader
	// elector's on that Lease as a HolderFunc. A Writer takes no write
	// unless it holds (ErrNotHolding); without it, it only reviews.
	Lease Holder
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

// ErrWriteLimit is returned when a Writer reached Options.MaxWrites; the
// objects it left are finished by another run.
var ErrWriteLimit = errors.New("interrupted (write limit reached)")

// Events receives what a Writer does, instead of printing it. Objects are
// named "pv/NAME" or "storageclass/NAME". Calls are serialised. No call
// carries a Secret's value.
type Events interface {
	// Writing announces the next write to obj, before it is sent; what
	// is the step as docs/rewrite-apply.md words it.
	Writing(obj, what string)
	// Noted names a change beyond the translation (access modes) or an
	// outcome that wrote nothing (a dry run's verdict, an object with
	// nothing to do).
	Noted(obj, what string)
	// KeptRetain names a PV whose replacement keeps reclaim policy Retain
	// where it had Delete, and why.
	KeptRetain(pv, why string)
	// Refused names an object left exactly as it was, and why.
	Refused(obj string, r *rewrite.Refusal)
}

// NoEvents discards every event.
type NoEvents struct{}

// Writing implements Events.
func (NoEvents) Writing(string, string) {}

// Noted implements Events.
func (NoEvents) Noted(string, string) {}

// KeptRetain implements Events.
func (NoEvents) KeptRetain(string, string) {}

// Refused implements Events.
func (NoEvents) Refused(string, *rewrite.Refusal) {}

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
	client  kubernetes.Interface
	tr      *translate.Translator
	logger  klog.Logger
	events  Events
	stateNS string
	// concurrency is how many PVs are rewritten at once; 0 means 1.
	concurrency int
	// online allows rewriting PVs that running pods use where onlineSafe
	// holds.
	online bool
	// undo replaces CSI PVs and StorageClasses csimigrate created by what
	// they replaced.
	undo      bool
	stepLimit int // stop after this many mutating steps (0: no limit)
	// ceph adopts RBD images (nil: none is adopted); cephConfig gives the
	// cluster entries' rados namespaces.
	ceph         Ceph
	cephConfig   ceph.ClusterConfig
	cephfsSecret *v1.SecretReference
	// vsphere adopts vSphere disks (nil: none is adopted).
	vsphere VSphere
	// adopt: the direction adopts CSI PVs (or, with undo, un-adopts them).
	adopt bool

	mu    sync.Mutex // guards what follows, and the events
	steps int
	// minor is the API server's minor version once read (0 before).
	minor int
	// kept names the PVs rewritten with Retain instead of Delete.
	kept []string
	// Lists read for the checks, shared by the workers for a short while.
	classes map[string]cached[*storagev1.StorageClass]
	pods    map[string]cached[[]v1.Pod]
	// allPVs are "name=cluster/pool/image" of the cluster's RBD PVs, for
	// finding the PVs that share an image.
	allPVs cached[[]string]
	// withState names the PVs that had a state ConfigMap when the run
	// listed them (nil: not listed); a PV not in it needs no read of its
	// ConfigMap before its first write (a ConfigMap created since makes
	// that write fail, and is then read).
	withState map[string]bool
	// listers answer reads from informers' caches where set.
	listers Listers
	// lease must hold before every write (nil: no write is taken).
	lease Holder
	// secrets are Secrets read for the checks, by "namespace/name".
	secrets map[string]cached[*v1.Secret]
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
	if o.AdoptCSI && o.Ceph == nil {
		return nil, errors.New("apply.New: AdoptCSI needs Ceph")
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
	a := &Writer{client: client, tr: tr, logger: logger, events: events, stateNS: ns, concurrency: o.Concurrency,
		online: o.Online, undo: o.Undo, stepLimit: o.MaxWrites, ceph: o.Ceph, cephConfig: o.CephConfig, cephfsSecret: o.CephFSSecret, adopt: o.AdoptCSI, vsphere: o.VSphere,
		lease: o.Lease}
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
func (a *Writer) IsSource(pv *v1.PersistentVolume) bool {
	kind, _ := a.kindOf(pv)
	return kind == a.Direction().Source
}

// IsSourceClass reports whether a StorageClass is one the Writer's
// direction replaces (none for the adoption of CSI PVs).
func (a *Writer) IsSourceClass(sc *storagev1.StorageClass) bool {
	return !a.adopt && rewrite.ClassKindOf(a.tr, sc) == a.Direction().Source
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

// step announces the next write to obj ("pv/NAME" or "storageclass/NAME"),
// or returns ErrWriteLimit when the write limit is reached.
func (a *Writer) step(obj, what string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lease == nil || !a.lease.Holding() {
		return fmt.Errorf("%s: %w", obj, ErrNotHolding)
	}
	if a.stepLimit > 0 && a.steps >= a.stepLimit {
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
	a.events.KeptRetain(pv, why)
}

func (a *Writer) note(obj, what string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events.Noted(obj, what)
}

// LiveTargets lists the PVs of the live cluster the Writer's direction
// replaces, and the PVs whose run was interrupted after the delete (they
// exist only as saved state), sorted by name.
func (a *Writer) LiveTargets(ctx context.Context) ([]Target, error) {
	seen := map[string]bool{}
	var out []Target
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := a.client.CoreV1().PersistentVolumes().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			pv := &list.Items[i]
			if a.IsSource(pv) && !seen[pv.Name] {
				seen[pv.Name] = true
				out = append(out, Target{Name: pv.Name})
			}
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	cms, err := a.client.CoreV1().ConfigMaps(a.stateNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=csimigrate"})
	if err != nil {
		return nil, err
	}
	for _, cm := range cms.Items {
		if pv := cm.Annotations[stateLabel]; pv != "" && !seen[pv] {
			seen[pv] = true
			out = append(out, Target{Name: pv})
		}
	}
	slices.SortFunc(out, func(x, y Target) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}

// Result counts what a run over several objects did.
type Result struct {
	// Done counts objects replaced, or found already done; Refused those
	// left as they were (each reported through Events.Refused).
	Done, Refused int
	errs          []error
}

// record counts the outcome of one object's run and reports a refusal; it
// returns whether the run was interrupted.
func (r *Result) record(a *Writer, obj string, err error) (interrupted bool) {
	var ref *rewrite.Refusal
	switch {
	case errors.Is(err, ErrWriteLimit):
		return true
	case errors.As(err, &ref):
		r.Refused++
		a.mu.Lock()
		a.events.Refused(obj, ref)
		a.mu.Unlock()
		r.errs = append(r.errs, fmt.Errorf("%s: %w", obj, err))
	case err != nil:
		r.errs = append(r.errs, fmt.Errorf("%s: %w", obj, err))
	default:
		r.Done++
	}
	return false
}

// PVs replaces every target PV, Options.Concurrency at a time, each PV's
// steps in order, until each is done, refused or failed. A refused PV is
// reported and left as it was; the others go on. The error joins every
// PV's, sorted by name; ErrWriteLimit when the write limit stopped it.
func (a *Writer) PVs(ctx context.Context, targets []Target) (Result, error) {
	var r Result
	if err := a.listState(ctx); err != nil {
		return r, err
	}
	var mu sync.Mutex
	interrupted := false
	work := make(chan Target)
	var wg sync.WaitGroup
	for range max(1, a.concurrency) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range work {
				err := runToEnd(ctx, a.PV(t))
				mu.Lock()
				if r.record(a, "pv/"+t.Name, err) {
					interrupted = true
				}
				mu.Unlock()
			}
		}()
	}
	for _, t := range targets {
		mu.Lock()
		stop := interrupted
		mu.Unlock()
		if stop {
			break
		}
		work <- t
	}
	close(work)
	wg.Wait()
	if interrupted {
		return r, ErrWriteLimit
	}
	slices.SortFunc(r.errs, func(x, y error) int { return strings.Compare(x.Error(), y.Error()) })
	return r, errors.Join(r.errs...)
}

// dryRunEach dry-runs each target with one, which sends the target's steps
// with server-side dry run and returns the errors of those that fail, each
// naming the object and the step.
func dryRunEach(targets []Target, one func(t Target) []error) error {
	var errs []error
	for _, t := range targets {
		errs = append(errs, one(t)...)
	}
	return errors.Join(errs...)
}

// DryRunPVs runs every check and sends each write of every target PV's
// rewrite (or undo) to the API server with server-side dry run (the
// replacement is validated under a temporary name, since the original still
// exists). It writes nothing.
func (a *Writer) DryRunPVs(ctx context.Context, targets []Target) error {
	dir := a.Direction()
	return dryRunEach(targets, func(t Target) []error {
		cur, err := a.client.CoreV1().PersistentVolumes().Get(ctx, t.Name, metav1.GetOptions{})
		if err != nil {
			return []error{fmt.Errorf("pv/%s: %w", t.Name, err)}
		}
		if !a.IsSource(cur) {
			a.note("pv/"+t.Name, "not "+dir.AScope+" PV; nothing to do")
			return nil
		}
		if t.UID != "" && cur.UID != t.UID {
			return []error{fmt.Errorf("pv/%s: the live PV has uid %s, the reviewed one %s", t.Name, cur.UID, t.UID)}
		}
		c, err := dir.check(a, ctx, cur)
		if err != nil {
			return []error{fmt.Errorf("pv/%s: %w", t.Name, err)}
		}
		errs := a.dryRunSteps(ctx, cur, c.repl)
		if len(errs) == 0 {
			a.note("pv/"+t.Name, "Retain, delete and create as "+pvDriver(c.repl)+" would be accepted")
			a.noteJournal("pv/"+t.Name, c.repl)
			if c.needsRegistration() {
				a.note("pv/"+t.Name, "would register disk "+c.adoption.disk.path+" as a First Class Disk and CNS volume in vCenter first (the handle is the ID vCenter gives it)")
			}
			if c.kept != "" {
				a.keptRetain(t.Name, c.kept)
			}
		}
		return errs
	})
}

// noteJournal names, for a dry run, each Ceph-side write the adoption of
// repl's image would make, as the command that makes it where the Ceph
// access can say so (package cephtool's Script), so that an admin can
// review or run them.
func (a *Writer) noteJournal(obj string, repl *v1.PersistentVolume) {
	j, err := journalOf(repl)
	if err != nil || j == nil {
		return
	}
	script, ok := a.ceph.(interface {
		Script(pool, namespace string, op adopt.Op) string
	})
	for _, op := range j.Writes() {
		line := "rados " + strings.Join(op.Args(), " ")
		if ok {
			line = script.Script(j.Pool, j.Namespace, op)
		}
		a.note(obj, "would write to Ceph: "+line)
	}
}

// dryRunSteps sends a PV's Retain, delete and the creation of its
// replacement (under a temporary name) with server-side dry run.
func (a *Writer) dryRunSteps(ctx context.Context, cur, repl *v1.PersistentVolume) []error {
	dry := []string{metav1.DryRunAll}
	pvs := a.client.CoreV1().PersistentVolumes()
	var errs []error
	upd := cur.DeepCopy()
	upd.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
	if _, err := pvs.Update(ctx, upd, metav1.UpdateOptions{DryRun: dry}); err != nil {
		errs = append(errs, fmt.Errorf("pv/%s: Retain: %w", cur.Name, err))
	}
	if err := pvs.Delete(ctx, cur.Name, metav1.DeleteOptions{DryRun: dry}); err != nil {
		errs = append(errs, fmt.Errorf("pv/%s: delete: %w", cur.Name, err))
	}
	repl = repl.DeepCopy()
	repl.Name = "csimigrate-dry-run-" + string(cur.UID)
	if _, err := pvs.Create(ctx, repl, metav1.CreateOptions{DryRun: dry}); err != nil {
		errs = append(errs, fmt.Errorf("pv/%s: create %s PV: %w", cur.Name, a.Direction().targetWord, err))
	}
	return errs
}

// pvDriver is a PV's CSI driver, or its in-tree plugin.
func pvDriver(pv *v1.PersistentVolume) string {
	if pv.Spec.CSI != nil {
		return pv.Spec.CSI.Driver
	}
	return plugin.InTreeNameOfPV(pv)
}

// Reviewed is what a Writer would make of one PV, for a review that an
// admin reads or runs instead of the Writer.
type Reviewed struct {
	// Replacement is the PV that replaces it, with reclaim policy Retain
	// and the policy to restore in annotation rewrite.AnnReclaimPolicy.
	Replacement *v1.PersistentVolume
	// Journal is the entry of Ceph CSI's journal the rewrite registers
	// before the replacement exists (an adoption), or the undo removes once
	// it exists; nil for neither.
	Journal *adopt.Journal
	// KeptRetain says why the replacement keeps Retain where the PV had
	// another policy ("" when it does not).
	KeptRetain string
}

// Review runs every check the Writer makes on a live PV of its direction
// before the first write, and returns what it would write; it writes
// nothing (the adoption's Ceph reads included: only reads).
func (a *Writer) Review(ctx context.Context, cur *v1.PersistentVolume) (Reviewed, error) {
	if cur == nil || !a.IsSource(cur) {
		return Reviewed{}, fmt.Errorf("not %s PV", a.Direction().AScope)
	}
	c, err := a.Direction().check(a, ctx, cur)
	if err != nil {
		return Reviewed{}, err
	}
	r := Reviewed{Replacement: c.repl, KeptRetain: c.kept}
	from := c.repl
	if a.undo {
		from = cur
	}
	if r.Journal, err = journalOf(from); err != nil {
		return Reviewed{}, err
	}
	return r, nil
}

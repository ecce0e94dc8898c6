package main

import (
	"context"
	"errors"
	"fmt"
	"io"
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

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/translate"
)

// runApply carries out the rewrite, or with -undo its undo, on the
// targets: the PVs and StorageClasses of the reviewed input, or of the live
// cluster, narrowed to names.
func runApply(c *common, tr *translate.Translator, o applyOptions, names []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if c.live {
		fmt.Fprintln(stderr, "csimigrate rewrite: -apply reads the live cluster itself; give -f for reviewed input, or neither")
		return exitUsage
	}
	client, err := clientFor(c.kubeconfig, c.context, o.qps, o.burst)
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
		return exitUsage
	}
	a := &applier{client: client, tr: tr, logger: c.logger(stderr), stateNS: o.stateNS, out: stdout, concurrency: o.concurrency, online: o.online, undo: o.undo}
	ctx := context.Background()
	targets, classes, code := a.selectTargets(ctx, c, names, stdin, stderr)
	if code != exitOK {
		return code
	}
	if o.dry {
		err = errors.Join(a.dryRun(ctx, targets), a.dryRunClasses(ctx, classes))
	} else {
		// One writer at a time: the Lease every csimigrate writer holds.
		var lease *writerLease
		if ctx, lease, err = holdWriterLease(ctx, client, o.stateNS, o.leaseWait); err != nil {
			fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
			return exitBlocked
		}
		err = a.applyAll(ctx, targets, classes)
		lease.release(context.Background())
	}
	if len(a.kept) > 0 {
		slices.Sort(a.kept)
		fmt.Fprintf(stdout, "%d PersistentVolumes kept at reclaim policy Retain instead of Delete (see above): %s\n", len(a.kept), strings.Join(a.kept, ", "))
	}
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
		return exitBlocked
	}
	return exitOK
}

// selectTargets are the PVs and StorageClasses a run acts on: those of the
// reviewed input that the run's direction replaces, each with the uid it had
// there, or else the cluster's (and those whose run was interrupted after the
// delete), narrowed to names; or the exit code of what went wrong.
func (a *applier) selectTargets(ctx context.Context, c *common, names []string, stdin io.Reader, stderr io.Writer) (pvs, scs []target, code int) {
	dir := a.direction()
	where := "cluster"
	if len(c.files) > 0 {
		where = "reviewed input"
		inv := &Inventory{}
		if err := c.read(stdin, stderr, inv); err != nil {
			fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
			return nil, nil, exitInput
		}
		for _, pv := range inv.PVs {
			if kind, _ := a.kindOf(pv); kind == dir.source {
				pvs = append(pvs, target{name: pv.Name, uid: pv.UID})
			}
		}
		for _, sc := range inv.StorageClasses {
			if a.isSourceClass(sc) {
				scs = append(scs, target{name: sc.Name, uid: sc.UID})
			}
		}
		a.say("%d %s PersistentVolumes and %d %s StorageClasses in the reviewed input\n", len(pvs), dir.scope, len(scs), dir.scope)
	} else {
		var err error
		if pvs, err = a.liveTargets(ctx); err == nil {
			scs, err = a.liveClassTargets(ctx)
		}
		if err != nil {
			fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
			return nil, nil, exitBlocked
		}
		a.say("%d %s PersistentVolumes and %d %s StorageClasses (or interrupted runs) in the cluster\n", len(pvs), dir.scope, len(scs), dir.scope)
	}
	if len(names) == 0 {
		return pvs, scs, exitOK
	}
	var namedPVs, namedSCs []target
	for _, n := range names {
		list, kind, name, from := &namedPVs, "PV", n, pvs
		if rest, ok := strings.CutPrefix(n, "storageclass/"); ok {
			list, kind, name, from = &namedSCs, "StorageClass", rest, scs
		}
		i := slices.IndexFunc(from, func(t target) bool { return t.name == name })
		if i < 0 {
			fmt.Fprintf(stderr, "csimigrate rewrite: %s %q is not %s %s of the %s\n", kind, name, dir.aScope, kind, where)
			return nil, nil, exitUsage
		}
		*list = append(*list, from[i])
	}
	a.say("%d PersistentVolumes and %d StorageClasses of them named\n", len(namedPVs), len(namedSCs))
	return namedPVs, namedSCs, exitOK
}

// applyAll takes the steps of every target PV, then of every target
// StorageClass (whose in-tree form the PVs' deletion secrets are read from),
// and prints the summary.
func (a *applier) applyAll(ctx context.Context, targets, classes []target) error {
	r, pvErr := a.rewriteAll(ctx, targets)
	var rc result
	var scErr error
	if !errors.Is(pvErr, errInterrupted) {
		rc, scErr = a.rewriteClasses(ctx, classes)
	}
	a.say("%d PersistentVolumes and %d StorageClasses %s or already done, %d refused and left as they were, %d steps taken\n",
		r.done, rc.done, a.direction().done, r.refused+rc.refused, a.steps)
	return errors.Join(pvErr, scErr)
}

// target is a PV the user named for the rewrite: by its name and, when it
// comes from reviewed input, the uid it had there.
type target struct {
	name string
	uid  types.UID
}

// applier carries out the rewrite against a live cluster. Every call to
// rewrite observes the cluster and takes the next step, so it can be run
// again after an interruption at any point and converges to the same state.
type applier struct {
	client  kubernetes.Interface
	tr      *translate.Translator
	logger  klog.Logger
	stateNS string
	out     io.Writer
	// concurrency is how many PVs are rewritten at once (each PV's steps
	// stay in order); 0 means 1.
	concurrency int
	// online allows rewriting PVs that running pods use where onlineSafe
	// holds.
	online bool
	// undo replaces CSI PVs and StorageClasses csimigrate created by what
	// they replaced.
	undo      bool
	stepLimit int // tests: stop after this many mutating steps (0: no limit)

	mu    sync.Mutex // guards what follows, and out
	steps int
	// minor is the API server's minor version once read (0 before).
	minor int
	// kept names the PVs rewritten with Retain instead of Delete.
	kept []string
	// Lists read for the checks, shared by the workers for a short while.
	classes map[string]cached[*storagev1.StorageClass]
	pods    map[string]cached[[]v1.Pod]
	// withState names the PVs that had a state ConfigMap when the run
	// listed them (nil: not listed); a PV not in it needs no read of its
	// ConfigMap before its first write (a ConfigMap created since makes
	// that write fail, and is then read).
	withState map[string]bool
}

// cached is a value read from the cluster at a time.
type cached[T any] struct {
	v  T
	at time.Time
}

// cacheFor is how long a StorageClass or a namespace's pod list is reused
// by the checks of other PVs: long enough for thousands of PVs in a few
// namespaces, short enough that a pod started during a run is seen.
const cacheFor = 5 * time.Second

// step announces the next write to obj ("pv/NAME" or "storageclass/NAME"),
// or returns errInterrupted when a test's step limit is reached.
func (a *applier) step(obj, what string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stepLimit > 0 && a.steps >= a.stepLimit {
		return errInterrupted
	}
	a.steps++
	fmt.Fprintf(a.out, "%s: %s\n", obj, what)
	return nil
}

// keptRetain names, on its own line, a PV rewritten with reclaim policy
// Retain instead of Delete, and why; the summary counts them.
func (a *applier) keptRetain(pv, why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.kept = append(a.kept, pv)
	fmt.Fprintf(a.out, "pv/%s: kept at %s\n", pv, why)
}

func (a *applier) say(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	fmt.Fprintf(a.out, format, args...)
}

// liveTargets lists the in-tree PVs of the live cluster csimigrate
// translates, and the PVs whose rewrite was interrupted after the delete
// (they exist only as saved state).
func (a *applier) liveTargets(ctx context.Context) ([]target, error) {
	seen := map[string]bool{}
	var out []target
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := a.client.CoreV1().PersistentVolumes().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			pv := &list.Items[i]
			if kind, _ := a.kindOf(pv); kind == a.direction().source && !seen[pv.Name] {
				seen[pv.Name] = true
				out = append(out, target{name: pv.Name})
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
			out = append(out, target{name: pv})
		}
	}
	slices.SortFunc(out, func(x, y target) int { return strings.Compare(x.name, y.name) })
	return out, nil
}

// result counts what a run did.
type result struct {
	done, refused int
	errs          []error
}

// record counts the outcome of one object's rewrite and reports a refusal;
// it returns whether the run was interrupted.
func (r *result) record(a *applier, obj string, err error) (interrupted bool) {
	var ref *refusal
	switch {
	case errors.Is(err, errInterrupted):
		return true
	case errors.As(err, &ref):
		r.refused++
		a.say("%s: refused, left as it was: %s\n", obj, ref.Reason)
		r.errs = append(r.errs, fmt.Errorf("%s: %w", obj, err))
	case err != nil:
		r.errs = append(r.errs, fmt.Errorf("%s: %w", obj, err))
	default:
		r.done++
	}
	return false
}

// rewriteAll rewrites every target, a.concurrency at a time, each PV's
// steps in order. A refused PV is reported and left as it was; the others
// go on. Errors are sorted by PV name.
func (a *applier) rewriteAll(ctx context.Context, targets []target) (result, error) {
	var r result
	if err := a.listState(ctx); err != nil {
		return r, err
	}
	var mu sync.Mutex
	interrupted := false
	work := make(chan target)
	var wg sync.WaitGroup
	for range max(1, a.concurrency) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range work {
				err := runSteps(ctx, a, newPVRun(a, t), pvSteps)
				mu.Lock()
				if r.record(a, "pv/"+t.name, err) {
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
		return r, errInterrupted
	}
	slices.SortFunc(r.errs, func(x, y error) int { return strings.Compare(x.Error(), y.Error()) })
	return r, errors.Join(r.errs...)
}

// dryRunEach dry-runs each target with one, which sends the target's steps
// with server-side dry run and returns the errors of those that fail, each
// naming the object and the step.
func dryRunEach(targets []target, one func(t target) []error) error {
	var errs []error
	for _, t := range targets {
		errs = append(errs, one(t)...)
	}
	return errors.Join(errs...)
}

// dryRun runs every check and sends each step of every PV's rewrite (or
// undo) to the API server with server-side dry run (the replacement is
// validated under a temporary name, since the original still exists).
func (a *applier) dryRun(ctx context.Context, targets []target) error {
	dir := a.direction()
	return dryRunEach(targets, func(t target) []error {
		cur, err := a.client.CoreV1().PersistentVolumes().Get(ctx, t.name, metav1.GetOptions{})
		if err != nil {
			return []error{fmt.Errorf("pv/%s: %w", t.name, err)}
		}
		if kind, _ := a.kindOf(cur); kind != dir.source {
			a.say("pv/%s: not %s PV; nothing to do\n", t.name, dir.aScope)
			return nil
		}
		if t.uid != "" && cur.UID != t.uid {
			return []error{fmt.Errorf("pv/%s: the live PV has uid %s, the reviewed one %s", t.name, cur.UID, t.uid)}
		}
		c, err := dir.check(a, ctx, cur)
		if err != nil {
			return []error{fmt.Errorf("pv/%s: %w", t.name, err)}
		}
		errs := a.dryRunSteps(ctx, cur, c.repl)
		if len(errs) == 0 {
			a.say("pv/%s: Retain, delete and create as %s would be accepted\n", t.name, pvDriver(c.repl))
			if c.kept != "" {
				a.keptRetain(t.name, c.kept)
			}
		}
		return errs
	})
}

// dryRunSteps sends a PV's Retain, delete and the creation of its
// replacement (under a temporary name) with server-side dry run.
func (a *applier) dryRunSteps(ctx context.Context, cur, repl *v1.PersistentVolume) []error {
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
		errs = append(errs, fmt.Errorf("pv/%s: create %s PV: %w", cur.Name, a.direction().targetWord, err))
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

// applyOptions are the flags of rewrite -apply.
type applyOptions struct {
	dry         bool
	stateNS     string
	concurrency int
	qps         float32
	burst       int
	online      bool
	undo        bool
	// leaseWait is how long to wait for the writer Lease.
	leaseWait time.Duration
}

package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
	cms, err := a.client.CoreV1().ConfigMaps(a.o.StateNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=csimigrate"})
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

// Result counts what a run over several objects did (a dry run: what the
// real run would do).
type Result struct {
	// Done counts objects replaced, or found already done; Refused those
	// left as they were (each reported through Events.Refused).
	Done, Refused int
	// RefusedBy counts the refused objects by each code their refusal
	// names (an object refused for two reasons is counted under both).
	RefusedBy map[rewrite.Code]int
	errs      []error
}

// record counts the outcome of one object's run and reports a refusal; it
// returns whether the run was interrupted.
func (r *Result) record(a *Writer, obj rewrite.ObjectRef, err error) (interrupted bool) {
	var ref *rewrite.Refusal
	switch {
	case errors.Is(err, ErrWriteLimit):
		return true
	case errors.As(err, &ref):
		r.Refused++
		if r.RefusedBy == nil {
			r.RefusedBy = map[rewrite.Code]int{}
		}
		for _, c := range ref.Codes() {
			r.RefusedBy[c]++
		}
		a.mu.Lock()
		a.events.Refused(obj, ref)
		a.mu.Unlock()
		r.errs = append(r.errs, &ObjectError{Object: obj, Err: err})
	case err != nil:
		r.errs = append(r.errs, &ObjectError{Object: obj, Err: err})
	default:
		r.Done++
	}
	return false
}

// PVs replaces every target PV, Options.Concurrency at a time, each PV's
// steps in order, until each is done, refused or failed. A refused PV is
// reported and left as it was; the others go on. The error joins every
// PV's, sorted by name; ErrWriteLimit when the write limit stopped it.
// With Options.DryRun it is DryRunPVs.
func (a *Writer) PVs(ctx context.Context, targets []Target) (Result, error) {
	if a.o.DryRun {
		return a.dryRunAll(targets, rewrite.PVRef, func(t Target) error { return a.dryRunPV(ctx, t) })
	}
	var r Result
	if err := a.listState(ctx); err != nil {
		return r, err
	}
	var mu sync.Mutex
	interrupted := false
	work := make(chan Target)
	var wg sync.WaitGroup
	for range max(1, a.o.Concurrency) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range work {
				err := runToEnd(ctx, a.PV(t))
				mu.Lock()
				if r.record(a, rewrite.PVRef(t.Name), err) {
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

// dryRunAll dry-runs each target with one, which checks it and sends its
// steps with server-side dry run, and counts and reports each outcome as
// the real run does (a refusal through Events.Refused); the error joins
// every target's, each naming the object.
func (a *Writer) dryRunAll(targets []Target, ref func(string) rewrite.ObjectRef, one func(t Target) error) (Result, error) {
	var r Result
	for _, t := range targets {
		r.record(a, ref(t.Name), one(t))
	}
	return r, errors.Join(r.errs...)
}

// DryRunPVs runs every check and sends each write of every target PV's
// rewrite (or undo) to the API server with server-side dry run (the
// replacement is validated under a temporary name, since the original still
// exists). It writes nothing. Each refusal is reported through
// Events.Refused, as the real run reports it.
func (a *Writer) DryRunPVs(ctx context.Context, targets []Target) error {
	_, err := a.dryRunAll(targets, rewrite.PVRef, func(t Target) error { return a.dryRunPV(ctx, t) })
	return err
}

// dryRunPV is one target's dry run: its checks' refusal, or the errors
// of the steps the API server would not accept, joined.
func (a *Writer) dryRunPV(ctx context.Context, t Target) error {
	dir := a.Direction()
	ref := rewrite.PVRef(t.Name)
	cur, err := a.client.CoreV1().PersistentVolumes().Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if !a.IsSource(cur) {
		a.note(ref, "not "+dir.AScope()+" PV; nothing to do")
		return nil
	}
	if t.UID != "" && cur.UID != t.UID {
		return refuse(rewrite.CodeReplacedSinceReview, "the live PV has uid %s, the reviewed one %s (replaced since the review)", cur.UID, t.UID)
	}
	c, err := dir.of().check(a, ctx, cur)
	if err != nil {
		return err
	}
	errs := a.dryRunSteps(ctx, cur, c.repl)
	if len(errs) == 0 {
		a.note(ref, "Retain, delete and create as "+pvDriver(c.repl)+" would be accepted")
		if change := rewrite.AccessModeChange(cur, c.repl); change != "" && !dir.IsUndo() {
			a.note(ref, change) // as the real run's save step notes it
		}
		a.noteJournal(ref, c.repl)
		if c.needsRegistration() {
			a.note(ref, "would register disk "+c.adoption.disk.path+" as a First Class Disk and CNS volume in vCenter first (the handle is the ID vCenter gives it)")
		}
		if c.kept != "" {
			a.keptRetain(t.Name, c.kept)
		}
	}
	return errors.Join(errs...)
}

// noteJournal names, for a dry run, each Ceph-side write the adoption of
// repl's image would make, as the command that makes it where the Ceph
// access can say so (package cephtool's Script), so that an admin can
// review or run them.
func (a *Writer) noteJournal(obj rewrite.ObjectRef, repl *v1.PersistentVolume) {
	j, err := journalOf(repl)
	if err != nil || j == nil {
		return
	}
	script, ok := a.o.Ceph.(interface {
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
		errs = append(errs, fmt.Errorf("setting reclaim policy Retain: %w", err))
	}
	if err := pvs.Delete(ctx, cur.Name, metav1.DeleteOptions{DryRun: dry}); err != nil {
		errs = append(errs, fmt.Errorf("delete: %w", err))
	}
	repl = repl.DeepCopy()
	repl.Name = "csimigrate-dry-run-" + string(cur.UID)
	if _, err := pvs.Create(ctx, repl, metav1.CreateOptions{DryRun: dry}); err != nil {
		errs = append(errs, fmt.Errorf("create %s PV: %w", a.o.Direction.of().targetWord, err))
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
	// PV is the replacement: PV.CSI is the PV that replaces it (in-tree
	// for an undo), with reclaim policy Retain and the policy to restore
	// in annotation rewrite.AnnReclaimPolicy; PV.Hazard says why it keeps
	// Retain where the PV had another policy ("" when it does not).
	PV rewrite.PV
	// Journal is the entry of Ceph CSI's journal the rewrite registers
	// before the replacement exists (an adoption), or the undo removes once
	// it exists; nil for neither.
	Journal *adopt.Journal
}

// Review runs every check the Writer makes on a live PV of its direction
// before the first write, and returns what it would write; it writes
// nothing (the adoption's Ceph reads included: only reads).
func (a *Writer) Review(ctx context.Context, cur *v1.PersistentVolume) (Reviewed, error) {
	if cur == nil || !a.IsSource(cur) {
		return Reviewed{}, fmt.Errorf("not %s PV", a.o.Direction.AScope())
	}
	c, err := a.o.Direction.of().check(a, ctx, cur)
	if err != nil {
		return Reviewed{}, err
	}
	r := Reviewed{PV: rewrite.PV{Name: cur.Name, OriginalPolicy: cur.Spec.PersistentVolumeReclaimPolicy, CSI: c.repl, Driver: pvDriver(c.repl),
		RestorePolicy: v1.PersistentVolumeReclaimPolicy(c.repl.Annotations[rewrite.AnnReclaimPolicy]), Hazard: c.kept}}
	from := c.repl
	if a.o.Direction.IsUndo() {
		from = cur
	}
	if r.Journal, err = journalOf(from); err != nil {
		return Reviewed{}, err
	}
	return r, nil
}

// LostClaims names ("namespace/name") the claims of the target PVs that
// show phase Lost while their PV exists and names them: the state
// kube-controller-manager gives a claim while its PV object is replaced,
// until its next sync of the claim binds it again (the claim sync period,
// 15 s by default). A run that ends with such claims should wait for them
// before the control plane is upgraded: a new kube-controller-manager
// that starts meanwhile skips their pods' volumes until then. It lists
// claims and PVs once, a page at a time.
func (a *Writer) LostClaims(ctx context.Context, targets []Target) ([]string, error) {
	names := make(map[string]bool, len(targets))
	for _, t := range targets {
		names[t.Name] = true
	}
	var lost []v1.PersistentVolumeClaim
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := a.client.CoreV1().PersistentVolumeClaims("").List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, c := range list.Items {
			if c.Status.Phase == v1.ClaimLost && names[c.Spec.VolumeName] {
				lost = append(lost, c)
			}
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			break
		}
	}
	var out []string
	for _, c := range lost {
		pv, err := getOrNil(a.client.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{}))
		if err != nil {
			return nil, err
		}
		if pv != nil && pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID == c.UID {
			out = append(out, c.Namespace+"/"+c.Name)
		}
	}
	return out, nil
}

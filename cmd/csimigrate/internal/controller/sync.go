package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/workqueue"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
)

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
// InTreePVs are the in-tree PVs the controller's cache holds (whole, as
// every in-tree PV is held), in no order: a first look, read without a
// request once the caches have synced (Ready).
func (c *Controller) InTreePVs() ([]*v1.PersistentVolume, error) {
	pvs, err := c.pvs.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := pvs[:0]
	for _, pv := range pvs {
		if plugin.InTreeNameOfPV(pv) != "" {
			out = append(out, pv)
		}
	}
	return out, nil
}

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
		driver, _, err := c.w.Identity(pv)
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
	uid, volume, deleting, ok := c.binding(ref.Namespace, ref.Name)
	return ok && uid == ref.UID && volume == pv.Name && !deleting
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
	case errors.Is(err, context.Canceled):
		// The controller is stopping (its context ended mid-step): not a
		// failure, and no Event; the next leader resumes from what the
		// cluster shows.
		return 0, false, nil
	case err != nil:
		c.m.failures.WithLabelValues(metricKind(obj)).Inc()
		if c.setBlocked(obj, ReasonFailed) {
			c.event(cur, v1.EventTypeWarning, ReasonFailed, err.Error())
		}
		return 0, false, err
	case p.Done:
		c.setBlocked(obj, "")
		if p.Object != nil {
			c.doneWithLive(obj, p.Object)
		} else {
			c.doneWith(obj, cur)
		}
		return 0, false, nil
	case p.Wrote != "":
		c.setBlocked(obj, "")
		c.mu.Lock()
		c.started[obj] = true
		c.mu.Unlock()
		c.m.writes.WithLabelValues(metricKind(obj)).Inc()
		// No Event for each write: on the PV and its claim they were as
		// many requests as the writes themselves, and the API server and
		// etcd served them on the writes' time. The steps are in the log
		// and csimigrate_writes_total; a refusal or failure midway has its
		// own Event, and the end is Migrated.
		c.logger.Info("Wrote", "object", obj.Resource(), "step", p.Wrote)
		return 0, true, nil
	}
	return max(p.RequeueAfter, 100*time.Millisecond), false, nil
}

// doneWith reports an object this process wrote to as migrated, cur as
// the informer holds it.
func (c *Controller) doneWith(obj rewrite.ObjectRef, cur any) {
	if !c.finished(obj) {
		return
	}
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

// doneWithLive reports an object this process wrote to as migrated, live
// as its run last saw it (its replacement): no read is needed to name it.
func (c *Controller) doneWithLive(obj rewrite.ObjectRef, live any) {
	if c.finished(obj) {
		c.event(live, v1.EventTypeNormal, ReasonMigrated, "replaced by its CSI form")
	}
}

// finished forgets that this process wrote to obj, and counts and logs it
// as migrated if it did.
func (c *Controller) finished(obj rewrite.ObjectRef) bool {
	c.mu.Lock()
	started := c.started[obj]
	delete(c.started, obj)
	c.mu.Unlock()
	c.logger.V(2).Info("Done", "object", obj.Resource(), "wroteToIt", started)
	if started {
		c.logger.Info("Migrated", "object", obj.Resource())
		c.m.migrated.WithLabelValues(metricKind(obj)).Inc()
	}
	return started
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

func (e *collect) Noted(_ rewrite.ObjectRef, what string) { e.notes = append(e.notes, what) }

func (e *collect) KeptRetain(pv rewrite.ObjectRef, why string) {
	e.notes = append(e.notes, "kept at "+why)
	if e.kept != nil {
		e.kept(pv, why)
	}
}

func (e *collect) Refused(rewrite.ObjectRef, *rewrite.Refusal) {}

func (e *collect) String() string { return strings.Join(e.notes, "; ") }

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

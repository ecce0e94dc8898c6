package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/rewrite"
)

// pvSteps replace one PV, in docs/rewrite-apply.md's order. The rewrite replaces an
// in-tree PV by its CSI form; the undo takes the same steps with the roles
// swapped (its direction says which PV is which, and how the replacement is
// built and checked).
var pvSteps = []step[*pvRun]{
	{name: "1. set reclaim policy Retain", done: (*pvRun).retainSet, pre: (*pvRun).checkFirst, say: (*pvRun).sayRetain, act: (*pvRun).setRetain},
	{name: "1. (wait for the deletion-protection finalizers' owners)", done: (*pvRun).ownersDone, act: (*pvRun).waitForOwners, wait: 200 * time.Millisecond},
	{name: "2. register the disk as a First Class Disk and CNS volume", done: (*pvRun).diskRegistered, pre: (*pvRun).checkFresh, say: (*pvRun).sayRegister, act: (*pvRun).registerDisk},
	{name: "2. save the replacement in a ConfigMap", done: (*pvRun).saved, pre: (*pvRun).checkFresh, say: (*pvRun).saySave, act: (*pvRun).save},
	{name: "3. delete the PV object", done: (*pvRun).deleted, pre: (*pvRun).retainInForce, say: (*pvRun).sayDelete, act: (*pvRun).delete},
	{name: "3. (wait for the deletion)", done: (*pvRun).heldOrGone, act: (*pvRun).waitForDeletion, wait: 100 * time.Millisecond},
	{name: "4. remove pv-protection from the deleted object", done: (*pvRun).gone, pre: (*pvRun).onlyProtection, say: (*pvRun).sayUnprotect, act: (*pvRun).unprotect},
	{name: "5. register the volume in Ceph CSI's journal", done: (*pvRun).journalWritten, pre: (*pvRun).claimStillThere, say: (*pvRun).sayJournal, act: (*pvRun).writeJournal},
	{name: "5. create the replacement", done: (*pvRun).created, pre: (*pvRun).claimStillThere, say: (*pvRun).sayCreate, act: (*pvRun).create},
	{name: "6. remove the volume's entry from Ceph CSI's journal", done: (*pvRun).journalRemoved, say: (*pvRun).sayUnjournal, act: (*pvRun).removeJournal},
	{name: "6. restore the reclaim policy", done: (*pvRun).policyRestored, pre: (*pvRun).adoptionVerified, say: (*pvRun).sayRestore, act: (*pvRun).restorePolicy},
	{name: "7. remove the saved replacement", done: (*pvRun).stateRemoved, say: (*pvRun).sayRemoveState, act: (*pvRun).removeState},
}

// pvRun is one PV's rewrite (or undo) in progress: what it last observed.
// What the run's own writes returned is used instead of reading the object
// again; anything else (a conflict, a missing object) is read afresh.
type pvRun struct {
	a   *Writer
	dir Direction
	t   Target
	// cur is the live PV, nil when there is none; cm the state ConfigMap
	// and state what it holds, nil when there is none.
	cur   *v1.PersistentVolume
	cm    *v1.ConfigMap
	state *rewriteState
	// kind is what cur is (kindOther when there is none), classified once per
	// observation for every step's done.
	kind pvKind
	why  string
	// havePV and haveCM say that cur and cm are what the last write
	// returned, so the next observation need not read them.
	havePV, haveCM bool
	// looked: the run has observed its PV once (the first look may come
	// from the PVs lister; every later one reads the API server).
	looked bool
	// cached: cur is the PVs lister's copy, not yet confirmed by the API
	// server.
	cached bool
	// checked is what the checks before the first write read, for cur's uid.
	checked      *checkedPV
	waitingSince time.Time
	// journal is the entry of Ceph CSI's journal this run writes (the
	// rewrite of an adopted image) or removes (its undo), while the state
	// is saved; jstate is what observe read back of it (journalState).
	journal *adopt.Journal
	jstate  string
	// jobj is the entry's per-volume object as observe read it (nil: it
	// does not exist); readBack is the entry this run read back written.
	jobj     map[string]string
	readBack *adopt.Journal
}

func newPVRun(a *Writer, t Target) *pvRun {
	return &pvRun{a: a, dir: a.Direction(), t: t, haveCM: a.knownNoState(t.Name)}
}

func (r *pvRun) obj() rewrite.ObjectRef { return rewrite.PVRef(r.t.Name) }

func (r *pvRun) current() runtime.Object {
	if r.cur == nil {
		return nil
	}
	return r.cur.DeepCopy()
}

// where names the state ConfigMap.
func (r *pvRun) where() string { return r.a.o.StateNamespace + "/" + StateName(r.t.Name) }

// observe reads the PV and its state, unless the last write returned them,
// and verifies that the state applies to the PV.
func (r *pvRun) observe(ctx context.Context) error {
	var err error
	switch {
	case r.havePV:
		r.cached = false
	case !r.looked:
		if r.cur, r.cached, err = r.a.cachedPV(ctx, r.t.Name); err != nil {
			return err
		}
	default:
		r.cached = false
		if r.cur, err = getOrNil(r.a.client.CoreV1().PersistentVolumes().Get(ctx, r.t.Name, metav1.GetOptions{})); err != nil {
			return err
		}
	}
	r.looked = true
	if !r.haveCM {
		if r.cm, err = getOrNil(r.a.client.CoreV1().ConfigMaps(r.a.o.StateNamespace).Get(ctx, StateName(r.t.Name), metav1.GetOptions{})); err != nil {
			return err
		}
	}
	r.havePV, r.haveCM = false, false
	if err := r.loadState(); err != nil {
		return err
	}
	if err := r.verify(); err != nil {
		return err
	}
	if err := r.observeDisk(ctx); err != nil {
		return err
	}
	return r.observeJournal(ctx)
}

// observeJournal reads back the journal entry the saved state writes or
// removes, while it matters: for the rewrite until the replacement exists,
// for the undo once it does.
func (r *pvRun) observeJournal(ctx context.Context) error {
	r.journal, r.jstate, r.jobj = nil, "", nil
	if r.state == nil {
		return nil
	}
	j := r.state.Journal
	if !r.dir.IsUndo() {
		var err error
		if j, err = journalOf(r.state.Replacement); err != nil {
			return err
		}
	}
	if j == nil || (r.cur == nil) == r.dir.IsUndo() {
		return nil
	}
	st, obj, err := r.a.journalRead(ctx, *j)
	if err != nil {
		return err
	}
	r.journal, r.jstate, r.jobj = j, st, obj
	if st == "written" {
		r.readBack = j
	}
	return nil
}

// loadState decodes and verifies the state ConfigMap when it changed.
func (r *pvRun) loadState() error {
	if r.cm == nil {
		r.state = nil
		return nil
	}
	if r.state != nil && r.state.cmVersion == r.cm.ResourceVersion {
		return nil
	}
	s, err := r.a.loadState(r.cm)
	if err != nil {
		return err
	}
	if r.t.UID != "" && s.UID != r.t.UID {
		return fmt.Errorf("ConfigMap %s was saved for uid %s, the reviewed PV has uid %s; nothing is created from it", r.where(), s.UID, r.t.UID)
	}
	if d := directionNamed(s.Direction, s.Undo); d != r.dir {
		return &InProgressError{ConfigMap: r.where(), Object: r.obj(), Run: d}
	}
	s.cmVersion = r.cm.ResourceVersion
	r.state = s
	return nil
}

// verify refuses a PV that is not what this direction replaces or creates,
// and stops where the saved state does not provably apply to the live PV.
func (r *pvRun) verify() error {
	r.classify()
	cur, s, name := r.cur, r.state, r.t.Name
	if cur == nil {
		if s == nil {
			return refuse(rewrite.CodeNotFound, "not found, and no saved replacement (ConfigMap %s)", r.where())
		}
		return nil
	}
	kind, why := r.kind, r.why
	switch {
	case kind == kindOther && s != nil:
		return fmt.Errorf("pv/%s is %s, and ConfigMap %s holds a replacement for it; not touching either", name, why, r.where())
	case kind == kindOther:
		return refuse(rewrite.CodeNotInScope, "%s", why)
	case kind == r.dir.of().target:
		if s == nil {
			return nil
		}
		driver, handle, err := r.a.Identity(cur)
		if err != nil || driver != s.Driver || handle != s.Handle {
			return fmt.Errorf("pv/%s is %s %q (%v), ConfigMap %s saved %s %q; not touching either", name, driver, handle, err, r.where(), s.Driver, s.Handle)
		}
		return nil
	case r.t.UID != "" && cur.UID != r.t.UID:
		return refuse(rewrite.CodeReplacedSinceReview, "the live PV has uid %s, the reviewed one %s (replaced since the review)", cur.UID, r.t.UID)
	case s != nil && cur.UID != s.UID:
		return fmt.Errorf("ConfigMap %s was saved for uid %s, pv/%s now has uid %s; nothing is done with it: delete it once the PV is checked", r.where(), s.UID, name, cur.UID)
	case s != nil && cur.DeletionTimestamp == nil && cur.ResourceVersion != s.ResourceVersion:
		return fmt.Errorf("pv/%s changed after its replacement was saved in ConfigMap %s (resourceVersion %s, saved %s); nothing is done with it: delete the ConfigMap and run again to rebuild it", name, r.where(), cur.ResourceVersion, s.ResourceVersion)
	}
	return nil
}

// classify sets what the live PV is.
func (r *pvRun) classify() {
	r.kind, r.why = kindOther, ""
	if r.cur != nil {
		r.kind, r.why = r.a.kindOf(r.cur)
	}
}

// isSource reports whether the live PV is the one this run replaces.
func (r *pvRun) isSource() bool { return r.cur != nil && r.kind == r.dir.of().source }

// Step 1: Retain, the original policy recorded on the PV.

func (r *pvRun) retainSet() bool {
	return !r.isSource() || r.state != nil || r.cur.Spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimRetain
}

// checkFirst runs every check on the live PV before the first write to it.
// The checks read other objects once per uid.
func (r *pvRun) checkFirst(ctx context.Context) error {
	if r.checked != nil && r.checked.uid == r.cur.UID {
		return nil
	}
	c, err := r.dir.of().check(r.a, ctx, r.cur)
	if err != nil {
		return err
	}
	r.checked = c
	return nil
}

// checkFresh is checkFirst on the PV as the API server has it: the saved
// replacement is built from it, and no write to the PV carries its
// resourceVersion before the state does. A lister's copy is confirmed
// first; one that lags is replaced, and the run looks again.
func (r *pvRun) checkFresh(ctx context.Context) error {
	if r.cached {
		live, err := getOrNil(r.a.client.CoreV1().PersistentVolumes().Get(ctx, r.t.Name, metav1.GetOptions{}))
		if err != nil {
			return err
		}
		r.cached = false
		if live == nil || live.ResourceVersion != r.cur.ResourceVersion {
			r.cur, r.havePV = live, true
			return errLookAgain
		}
		// The same version: built from the API server's copy all the same
		// (a cache may keep less of it: a controller's informers drop the
		// managed fields' contents and kubectl's last-applied copy).
		r.cur = live
	}
	return r.checkFirst(ctx)
}

func (r *pvRun) sayRetain() string {
	return "set reclaim policy Retain (was " + string(r.cur.Spec.PersistentVolumeReclaimPolicy) + ")"
}

func (r *pvRun) setRetain(ctx context.Context) error {
	upd := r.cur.DeepCopy()
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	upd.Annotations[rewrite.AnnReclaimPolicy] = string(r.cur.Spec.PersistentVolumeReclaimPolicy)
	upd.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
	// The update carries cur's resourceVersion: it applies to this exact
	// object or fails.
	return r.update(ctx, upd)
}

// update sends upd, which carries the resourceVersion it was read with, and
// keeps the PV as updated; on a conflict the PV is read again.
func (r *pvRun) update(ctx context.Context, upd *v1.PersistentVolume) error {
	updated, err := r.a.client.CoreV1().PersistentVolumes().Update(ctx, upd, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err):
		return nil
	case err != nil:
		return err
	}
	r.cur, r.havePV, r.haveCM = updated, true, true
	return nil
}

func (r *pvRun) ownersDone() bool {
	return !r.isSource() || r.state != nil || len(r.protectionHeld()) == 0
}

// protectionHeld are the deletion-protection finalizers on the live PV.
func (r *pvRun) protectionHeld() []string {
	return slices.DeleteFunc(slices.Clone(r.cur.Finalizers), func(f string) bool { return !slices.Contains(rewrite.DeletionProtection, f) })
}

// waitForOwners waits while Retain is in force for the owners of the
// deletion-protection finalizers to remove them; csimigrate never does.
func (r *pvRun) waitForOwners(context.Context) error {
	if r.waitingSince.IsZero() {
		r.waitingSince = time.Now()
	}
	if time.Since(r.waitingSince) > finalizersWaitFor {
		return fmt.Errorf("pv/%s: finalizers %q are still there %s after Retain was set; their owners (kube-controller-manager's persistentvolume-binder, external-provisioner) remove them: is the owner running? csimigrate does not remove them; run again once they are gone", r.t.Name, r.protectionHeld(), finalizersWaitFor)
	}
	return nil
}

// Step 2: the replacement saved, with what proves it still applies.

func (r *pvRun) saved() bool { return !r.isSource() || r.state != nil }

func (r *pvRun) saySave() string {
	return fmt.Sprintf("save the %s replacement in ConfigMap %s", r.dir.of().targetWord, r.where())
}

// save builds the replacement again from the PV as it is now (with the
// policy step 1 recorded) and saves it.
func (r *pvRun) save(ctx context.Context) error {
	repl, kept, err := r.dir.of().build(r.a, r.cur, r.checked)
	if err != nil {
		return refuse(rewrite.CodeNotTranslatable, "%v", err)
	}
	if change := rewrite.AccessModeChange(r.cur, repl); change != "" && !r.dir.IsUndo() {
		r.a.note(r.obj(), change)
	}
	saved, err := r.a.saveState(ctx, r.cur, repl, kept, r.dir)
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil
	case err != nil:
		return err
	}
	r.cm, r.haveCM, r.havePV = saved, true, true
	return nil
}

// Step 3: the PV object deleted with uid and resourceVersion preconditions.

func (r *pvRun) deleted() bool { return !r.isSource() || r.cur.DeletionTimestamp != nil }

func (r *pvRun) retainInForce(context.Context) error {
	if p := r.cur.Spec.PersistentVolumeReclaimPolicy; p != v1.PersistentVolumeReclaimRetain {
		return fmt.Errorf("pv/%s has reclaim policy %s although its replacement was saved; not deleting it", r.t.Name, p)
	}
	return nil
}

func (r *pvRun) sayDelete() string {
	return "delete the " + r.dir.of().sourceWord + " PV object (Retain: the volume is kept)"
}

func (r *pvRun) delete(ctx context.Context) error {
	uid, rv := r.cur.UID, r.cur.ResourceVersion
	err := r.a.client.CoreV1().PersistentVolumes().Delete(ctx, r.t.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	switch {
	case err == nil && len(r.cur.Finalizers) == 0:
		r.cur, r.havePV, r.haveCM = nil, true, true
	case err == nil:
		// Held by its finalizers: marked deleted (its resourceVersion is
		// unknown; the next step does not need it).
		deleted := r.cur.DeepCopy()
		now := metav1.Now()
		deleted.DeletionTimestamp = &now
		r.cur, r.havePV, r.haveCM = deleted, true, true
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
	default:
		return err
	}
	return nil
}

// heldOrGone: a deleted PV without finalizers is on its way out.
func (r *pvRun) heldOrGone() bool { return !r.isSource() || len(r.cur.Finalizers) > 0 }

func (r *pvRun) waitForDeletion(context.Context) error { return nil }

// Step 4: pv-protection removed from the object this run deleted.

func (r *pvRun) gone() bool { return !r.isSource() }

// onlyProtection: the deleted PV (Retain is in force: the policy was checked
// before the state was saved) may be held only by pv-protection, the one
// finalizer csimigrate removes.
func (r *pvRun) onlyProtection(context.Context) error {
	if others := slices.DeleteFunc(slices.Clone(r.cur.Finalizers), func(f string) bool { return f == pvProtection }); len(others) > 0 {
		return fmt.Errorf("pv/%s is being deleted and held by finalizers %q besides %s; csimigrate removes only that one: remove the others or wait for their owners, then run again", r.t.Name, others, pvProtection)
	}
	return nil
}

func (r *pvRun) sayUnprotect() string {
	return "remove finalizer " + pvProtection + " from the deleted " + r.dir.of().sourceWord + " PV (Retain is in force)"
}

// unprotect applies only to this object (uid) with exactly this finalizer
// list; otherwise the patch's test fails and the PV is read again.
func (r *pvRun) unprotect(ctx context.Context) error {
	fins, _ := json.Marshal(r.cur.Finalizers)
	uid, _ := json.Marshal(string(r.cur.UID))
	patch := `[{"op":"test","path":"/metadata/uid","value":` + string(uid) + `},{"op":"test","path":"/metadata/finalizers","value":` + string(fins) +
		`},{"op":"remove","path":"/metadata/finalizers"}]`
	_, err := r.a.client.CoreV1().PersistentVolumes().Patch(ctx, r.t.Name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	switch {
	case err == nil:
		r.cur, r.havePV, r.haveCM = nil, true, true // no finalizer left: gone
	case apierrors.IsNotFound(err), apierrors.IsInvalid(err), apierrors.IsConflict(err):
	default:
		return err
	}
	return nil
}

// Step 5 (an adopted volume): the journal entry written before the PV that
// names it exists.

func (r *pvRun) journalWritten() bool {
	return r.journal == nil || r.dir.IsUndo() || r.jstate == "written"
}

func (r *pvRun) sayJournal() string {
	return fmt.Sprintf("register %s in Ceph CSI's journal as %s (rados: create %s, its keys, %s %s)", volumeWord(*r.journal),
		r.state.Replacement.Spec.CSI.VolumeHandle, r.journal.Object(), r.journal.Directory(), r.journal.DirectoryKey())
}

// volumeWord names the volume of a journal entry: an RBD image by pool and
// name, a CephFS subvolume by name (its entry lives in the file system's
// metadata pool).
func volumeWord(j adopt.Journal) string {
	if j.ImageID == "" && j.Namespace == adopt.JournalNamespaceCephFS {
		return fmt.Sprintf("subvolume %s (journal in %s, namespace %s)", j.ImageName, j.Pool, j.Namespace)
	}
	return fmt.Sprintf("image %s/%s", j.Pool, j.ImageName)
}

func (r *pvRun) writeJournal(ctx context.Context) error {
	r.havePV, r.haveCM = true, true // the cluster's objects are as observed
	return r.a.writeJournal(ctx, *r.journal, r.jobj)
}

// Step 5: the replacement created, only for the claim it was built for.

func (r *pvRun) created() bool { return r.cur != nil }

func (r *pvRun) claimStillThere(ctx context.Context) error {
	if err := r.a.claimStillThere(ctx, r.state); err != nil {
		return fmt.Errorf("ConfigMap %s: %w; nothing is created from it", r.where(), err)
	}
	return nil
}

func (r *pvRun) sayCreate() string {
	return "create the " + r.dir.of().targetWord + " PV (reclaim policy Retain for now)"
}

func (r *pvRun) create(ctx context.Context) error {
	created, err := r.a.client.CoreV1().PersistentVolumes().Create(ctx, r.state.Replacement.DeepCopy(), metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil
	case err != nil:
		return err
	}
	r.cur, r.havePV, r.haveCM = created, true, true
	return nil
}

// Step 6 (the undo of an adopted volume): its journal entry removed once
// the PV that names it is gone and its replacement exists.

func (r *pvRun) journalRemoved() bool {
	return r.journal == nil || !r.dir.IsUndo() || r.jstate == "absent"
}

func (r *pvRun) sayUnjournal() string {
	return fmt.Sprintf("remove %s's entry from Ceph CSI's journal (rados: rmomapkey %s %s, rm %s)", volumeWord(*r.journal),
		r.journal.Directory(), r.journal.DirectoryKey(), r.journal.Object())
}

func (r *pvRun) removeJournal(ctx context.Context) error {
	r.havePV, r.haveCM = true, true
	return r.a.removeJournal(ctx, *r.journal)
}

// Step 6: the policy recorded on the replacement restored; an adopted
// PV's only once Ceph CSI provably finds exactly its image.

func (r *pvRun) adoptionVerified(ctx context.Context) error {
	if r.dir.IsUndo() {
		return nil
	}
	if disk, ok, err := adopt.VSphereDiskOf(r.cur); err != nil || ok {
		if err == nil {
			err = r.a.verifyVSphereAdoption(ctx, r.cur, disk)
		}
		if err != nil {
			return fmt.Errorf("pv/%s keeps reclaim policy Retain until its adoption is verified: %w", r.t.Name, err)
		}
		return nil
	}
	j, err := journalOf(r.cur)
	if err != nil || j == nil {
		return err
	}
	if err := r.a.verifyAdoption(ctx, r.cur, *j, r.readBack != nil && *r.readBack == *j); err != nil {
		return fmt.Errorf("pv/%s keeps reclaim policy Retain until its adoption is verified: %w", r.t.Name, err)
	}
	return nil
}

func (r *pvRun) policyRestored() bool {
	_, pending := r.cur.Annotations[rewrite.AnnReclaimPolicy]
	return !pending
}

func (r *pvRun) sayRestore() string {
	return "restore reclaim policy " + r.cur.Annotations[rewrite.AnnReclaimPolicy]
}

func (r *pvRun) restorePolicy(ctx context.Context) error {
	upd := r.cur.DeepCopy()
	upd.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimPolicy(r.cur.Annotations[rewrite.AnnReclaimPolicy])
	delete(upd.Annotations, rewrite.AnnReclaimPolicy)
	return r.update(ctx, upd)
}

// Step 7: the state removed; a PV kept at Retain is named.

func (r *pvRun) stateRemoved() bool { return r.state == nil }

func (r *pvRun) sayRemoveState() string { return "remove the saved replacement" }

func (r *pvRun) removeState(ctx context.Context) error {
	if r.state.KeptRetain != "" {
		r.a.keptRetain(r.t.Name, r.state.KeptRetain)
	}
	uid := r.cm.UID
	if err := r.a.client.CoreV1().ConfigMaps(r.a.o.StateNamespace).Delete(ctx, r.cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	r.cm, r.haveCM, r.havePV = nil, true, true
	return nil
}

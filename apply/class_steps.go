package apply

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csimigrate/csimigrate/rewrite"
)

// classSteps replace one StorageClass, after the PVs: the rewrite an
// in-tree class by its CSI form, the undo a CSI class csimigrate created by
// the in-tree class it replaced. Claims created between the delete and the
// create that name the class wait (Pending) until it exists again.
var classSteps = []step[*classRun]{
	{name: "1. save the replacement in a ConfigMap", done: (*classRun).saved, pre: (*classRun).checkFirst, say: (*classRun).saySave, act: (*classRun).save},
	{name: "2. delete the StorageClass", done: (*classRun).deleted, say: (*classRun).sayDelete, act: (*classRun).delete},
	{name: "3. create the replacement", done: (*classRun).created, say: (*classRun).sayCreate, act: (*classRun).create},
	{name: "4. remove the saved replacement", done: (*classRun).stateRemoved, say: (*classRun).sayRemoveState, act: (*classRun).removeState},
}

// classRun is one StorageClass's rewrite (or undo) in progress.
type classRun struct {
	a     *Writer
	t     Target
	cur   *storagev1.StorageClass // nil when there is none
	cm    *v1.ConfigMap
	state *scState
	// repl is the replacement the checks built, for cur's uid.
	repl *storagev1.StorageClass
}

func (a *Writer) newClassRun(t Target) *classRun { return &classRun{a: a, t: t} }

func (r *classRun) obj() rewrite.ObjectRef { return rewrite.ClassRef(r.t.Name) }

func (r *classRun) current() runtime.Object {
	if r.cur == nil {
		return nil
	}
	return r.cur.DeepCopy()
}

func (r *classRun) where() string { return r.a.o.StateNamespace + "/" + ClassStateName(r.t.Name) }

// isTargetClass reports whether a class is what the direction creates.
func (a *Writer) isTargetClass(sc *storagev1.StorageClass) bool {
	return rewriteKind(rewrite.ClassKindOf(a.tr, sc)) == a.o.Direction.of().target
}

// observe reads the class and its state and verifies that the state
// applies to the class.
func (r *classRun) observe(ctx context.Context) error {
	var err error
	if r.cur, err = getOrNil(r.a.client.StorageV1().StorageClasses().Get(ctx, r.t.Name, metav1.GetOptions{})); err != nil {
		return err
	}
	if r.cm, err = getOrNil(r.a.client.CoreV1().ConfigMaps(r.a.o.StateNamespace).Get(ctx, ClassStateName(r.t.Name), metav1.GetOptions{})); err != nil {
		return err
	}
	if err := r.loadState(); err != nil {
		return err
	}
	return r.verify()
}

func (r *classRun) loadState() error {
	r.state = nil
	if r.cm == nil {
		return nil
	}
	s := &scState{}
	if err := r.a.readState(r.cm, s); err != nil {
		return err
	}
	switch {
	case s.Replacement == nil || s.Replacement.Name != r.t.Name || s.StorageClass != r.t.Name:
		return fmt.Errorf("ConfigMap %s does not hold a replacement for StorageClass %s; nothing is created from it", r.where(), r.t.Name)
	case r.t.UID != "" && s.UID != r.t.UID:
		return fmt.Errorf("ConfigMap %s was saved for uid %s, the reviewed StorageClass has uid %s; nothing is created from it", r.where(), s.UID, r.t.UID)
	case s.Undo != r.a.o.Direction.IsUndo():
		return &InProgressError{ConfigMap: r.where(), Object: r.obj(), Run: directionNamed("", s.Undo)}
	}
	r.state = s
	return nil
}

func (r *classRun) verify() error {
	cur, s, name := r.cur, r.state, r.t.Name
	switch {
	case cur == nil && s == nil:
		return refuse(rewrite.CodeNotFound, "not found, and no saved replacement (ConfigMap %s)", r.where())
	case cur == nil:
		return nil
	case r.a.isTargetClass(cur):
		if s != nil && cur.Provisioner != s.Replacement.Provisioner {
			return fmt.Errorf("StorageClass %s has provisioner %s, ConfigMap %s saved %s; not touching either", name, cur.Provisioner, r.where(), s.Replacement.Provisioner)
		}
		return nil
	case !r.a.IsSourceClass(cur) && r.a.o.Direction.IsUndo():
		return refuse(rewrite.CodeNotInScope, "provisioner %s: not a StorageClass csimigrate created", cur.Provisioner)
	case !r.a.IsSourceClass(cur):
		return refuse(rewrite.CodeNotInScope, "provisioner %s is not an in-tree plugin csimigrate translates", cur.Provisioner)
	case r.t.UID != "" && cur.UID != r.t.UID:
		return refuse(rewrite.CodeReplacedSinceReview, "the live StorageClass has uid %s, the reviewed one %s (replaced since the review)", cur.UID, r.t.UID)
	case s != nil && (cur.UID != s.UID || cur.ResourceVersion != s.ResourceVersion):
		return fmt.Errorf("StorageClass %s changed after its replacement was saved in ConfigMap %s (uid %s, resourceVersion %s; saved %s, %s); nothing is done with it: delete the ConfigMap and run again to rebuild it",
			name, r.where(), cur.UID, cur.ResourceVersion, s.UID, s.ResourceVersion)
	}
	return nil
}

// Step 1: the replacement saved, after every check.

func (r *classRun) saved() bool { return r.cur == nil || !r.a.IsSourceClass(r.cur) || r.state != nil }

func (r *classRun) checkFirst(ctx context.Context) error {
	repl, err := r.a.classChecks(ctx, r.cur)
	r.repl = repl
	return err
}

// classChecks runs every check on a class before the first write to it and
// returns its replacement; a refusal leaves it as it was.
//
// A class is replaced only when its replacement would work: its CSI driver
// is registered, the Ceph CSI driver serves the cluster entry it names and
// the secrets it names hold what the driver reads; the refusal names every
// reason at once, with the codes the plan gives.
func (a *Writer) classChecks(ctx context.Context, cur *storagev1.StorageClass) (*storagev1.StorageClass, error) {
	var rs reasons
	if err := rs.add(a.keptRefusal("StorageClass", cur)); err != nil {
		return nil, err
	}
	if a.o.Direction.IsUndo() {
		repl, err := rewrite.ClassUndoReplacement(cur)
		if err != nil {
			rs.add(asRefusal(err))
			return nil, rs.err()
		}
		if err := rs.add(a.inTreeServed(repl.Provisioner)); err != nil {
			return nil, err
		}
		return repl, rs.err()
	}
	repl, err := a.classReplacement(cur)
	if err != nil {
		rs.add(refuse(rewrite.CodeNotTranslatable, "%v", err))
		return nil, rs.err()
	}
	for _, check := range []func() error{
		// In the order the plan names them.
		func() error { return a.driverRefusal(ctx, repl.Provisioner) },
		func() error { return a.classSecretRefusal(ctx, cur, repl) },
		func() error { return a.classEntryRefusal(ctx, repl) },
	} {
		if err := rs.add(check()); err != nil {
			return nil, err
		}
	}
	return repl, rs.err()
}

func (r *classRun) saySave() string {
	return "save the " + r.a.o.Direction.of().targetWord + " replacement in ConfigMap " + r.where()
}

func (r *classRun) save(ctx context.Context) error {
	s := scState{StorageClass: r.t.Name, Undo: r.a.o.Direction.IsUndo(), UID: r.cur.UID, ResourceVersion: r.cur.ResourceVersion, Replacement: r.repl}
	if _, err := r.a.writeState(ctx, ClassStateName(r.t.Name), stateLabelSC, r.t.Name, &s); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// Step 2: the class deleted with uid and resourceVersion preconditions.

func (r *classRun) deleted() bool { return r.cur == nil || !r.a.IsSourceClass(r.cur) }

func (r *classRun) sayDelete() string {
	return "delete the " + r.a.o.Direction.of().sourceWord + " StorageClass (its PVs are not affected)"
}

func (r *classRun) delete(ctx context.Context) error {
	uid, rv := r.cur.UID, r.cur.ResourceVersion
	err := r.a.client.StorageV1().StorageClasses().Delete(ctx, r.t.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

// Step 3: the replacement created.

func (r *classRun) created() bool { return r.cur != nil }

func (r *classRun) sayCreate() string {
	return "create the " + r.a.o.Direction.of().targetWord + " StorageClass (" + r.state.Replacement.Provisioner + ")"
}

func (r *classRun) create(ctx context.Context) error {
	if _, err := r.a.client.StorageV1().StorageClasses().Create(ctx, r.state.Replacement.DeepCopy(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// Step 4: the state removed.

func (r *classRun) stateRemoved() bool { return r.state == nil }

func (r *classRun) sayRemoveState() string { return "remove the saved replacement" }

func (r *classRun) removeState(ctx context.Context) error {
	uid := r.cm.UID
	if err := r.a.client.CoreV1().ConfigMaps(r.a.o.StateNamespace).Delete(ctx, r.cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
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
	a     *applier
	t     target
	cur   *storagev1.StorageClass // nil when there is none
	cm    *v1.ConfigMap
	state *scState
	// repl is the replacement the checks built, for cur's uid.
	repl *storagev1.StorageClass
}

func (a *applier) newClassRun(t target) *classRun { return &classRun{a: a, t: t} }

func (r *classRun) obj() string { return "storageclass/" + r.t.name }

func (r *classRun) where() string { return r.a.stateNS + "/" + scStateName(r.t.name) }

// isSourceClass reports whether a class is one the applier's direction
// replaces: an in-tree class csimigrate translates, or for the undo a CSI
// class it created.
func (a *applier) isSourceClass(sc *storagev1.StorageClass) bool {
	return isSourceClass(a.tr, a.undo, sc)
}

// isSourceClass reports whether a class is one the rewrite replaces, or with
// undo one its undo replaces.
func isSourceClass(tr *translate.Translator, undo bool, sc *storagev1.StorageClass) bool {
	inTree := translatableClass(tr, sc)
	if undo {
		return !inTree && sc.Annotations[AnnMigratedFrom] != ""
	}
	return inTree
}

// isTargetClass reports whether a class is what the direction creates.
func (a *applier) isTargetClass(sc *storagev1.StorageClass) bool {
	inTree := translatableClass(a.tr, sc)
	if a.undo {
		return inTree
	}
	return !inTree && sc.Annotations[AnnMigratedFrom] != ""
}

// observe reads the class and its state and verifies that the state
// applies to the class.
func (r *classRun) observe(ctx context.Context) error {
	var err error
	if r.cur, err = getOrNil(r.a.client.StorageV1().StorageClasses().Get(ctx, r.t.name, metav1.GetOptions{})); err != nil {
		return err
	}
	if r.cm, err = getOrNil(r.a.client.CoreV1().ConfigMaps(r.a.stateNS).Get(ctx, scStateName(r.t.name), metav1.GetOptions{})); err != nil {
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
	case s.Replacement == nil || s.Replacement.Name != r.t.name || s.StorageClass != r.t.name:
		return fmt.Errorf("ConfigMap %s does not hold a replacement for StorageClass %s; nothing is created from it", r.where(), r.t.name)
	case r.t.uid != "" && s.UID != r.t.uid:
		return fmt.Errorf("ConfigMap %s was saved for uid %s, the reviewed StorageClass has uid %s; nothing is created from it", r.where(), s.UID, r.t.uid)
	case s.Undo != r.a.undo:
		return fmt.Errorf("ConfigMap %s holds %s of storageclass/%s in progress; finish it first (csimigrate %s), nothing is done with it here", r.where(), directionOf(s.Undo).what, r.t.name, directionOf(s.Undo).command)
	}
	r.state = s
	return nil
}

func (r *classRun) verify() error {
	cur, s, name := r.cur, r.state, r.t.name
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
	case !r.a.isSourceClass(cur) && r.a.undo:
		return refuse(rewrite.CodeNotInScope, "provisioner %s: not a StorageClass csimigrate created", cur.Provisioner)
	case !r.a.isSourceClass(cur):
		return refuse(rewrite.CodeNotInScope, "provisioner %s is not an in-tree plugin csimigrate translates", cur.Provisioner)
	case r.t.uid != "" && cur.UID != r.t.uid:
		return refuse(rewrite.CodeReplacedSinceReview, "the live StorageClass has uid %s, the reviewed one %s (replaced since the review)", cur.UID, r.t.uid)
	case s != nil && (cur.UID != s.UID || cur.ResourceVersion != s.ResourceVersion):
		return fmt.Errorf("StorageClass %s changed after its replacement was saved in ConfigMap %s (uid %s, resourceVersion %s; saved %s, %s); nothing is done with it: delete the ConfigMap and run again to rebuild it",
			name, r.where(), cur.UID, cur.ResourceVersion, s.UID, s.ResourceVersion)
	}
	return nil
}

// Step 1: the replacement saved, after every check.

func (r *classRun) saved() bool { return r.cur == nil || !r.a.isSourceClass(r.cur) || r.state != nil }

func (r *classRun) checkFirst(ctx context.Context) error {
	repl, err := r.a.classChecks(ctx, r.cur)
	r.repl = repl
	return err
}

// classChecks runs every check on a class before the first write to it and
// returns its replacement; a refusal leaves it as it was.
func (a *applier) classChecks(ctx context.Context, cur *storagev1.StorageClass) (*storagev1.StorageClass, error) {
	if a.undo {
		repl, err := classUndoReplacement(cur)
		if err != nil {
			return nil, asRefusal(err)
		}
		return repl, a.inTreeServed(repl.Provisioner)
	}
	repl, err := a.classReplacement(cur)
	if err != nil {
		return nil, refuse(rewrite.CodeNotTranslatable, "%v", err)
	}
	return repl, a.classSecretRefusal(ctx, cur, repl)
}

func (r *classRun) saySave() string {
	return "save the " + r.a.direction().targetWord + " replacement in ConfigMap " + r.where()
}

func (r *classRun) save(ctx context.Context) error {
	s := scState{StorageClass: r.t.name, Undo: r.a.undo, UID: r.cur.UID, ResourceVersion: r.cur.ResourceVersion, Replacement: r.repl}
	if _, err := r.a.writeState(ctx, scStateName(r.t.name), stateLabelSC, r.t.name, &s); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// Step 2: the class deleted with uid and resourceVersion preconditions.

func (r *classRun) deleted() bool { return r.cur == nil || !r.a.isSourceClass(r.cur) }

func (r *classRun) sayDelete() string {
	return "delete the " + r.a.direction().sourceWord + " StorageClass (its PVs are not affected)"
}

func (r *classRun) delete(ctx context.Context) error {
	uid, rv := r.cur.UID, r.cur.ResourceVersion
	err := r.a.client.StorageV1().StorageClasses().Delete(ctx, r.t.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

// Step 3: the replacement created.

func (r *classRun) created() bool { return r.cur != nil }

func (r *classRun) sayCreate() string {
	return "create the " + r.a.direction().targetWord + " StorageClass (" + r.state.Replacement.Provisioner + ")"
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
	if err := r.a.client.CoreV1().ConfigMaps(r.a.stateNS).Delete(ctx, r.cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// classUndoReplacement is the in-tree class a CSI class csimigrate created
// replaced: the one recorded in AnnOriginalClass, with the CSI class's name,
// labels and annotations (without those the rewrite added, listed in
// AnnAddedAnnotations: an annotation an admin changed since is kept).
func classUndoReplacement(cur *storagev1.StorageClass) (*storagev1.StorageClass, error) {
	raw, ok := cur.Annotations[AnnOriginalClass]
	if !ok {
		return nil, &refusal{Code: rewrite.CodeNotRecorded, Reason: "it has no annotation " + AnnOriginalClass + " (an earlier csimigrate replaced the class without recording it)",
			Remedy: "create the in-tree class by hand: delete this one and create it with provisioner " + cur.Annotations[AnnMigratedFrom] + " and its former parameters"}
	}
	var orig storagev1.StorageClass
	if err := json.Unmarshal([]byte(raw), &orig); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", AnnOriginalClass, err)
	}
	if orig.Provisioner != cur.Annotations[AnnMigratedFrom] {
		return nil, fmt.Errorf("annotation %s names provisioner %q, annotation %s %q", AnnOriginalClass, orig.Provisioner, AnnMigratedFrom, cur.Annotations[AnnMigratedFrom])
	}
	out := orig.DeepCopy()
	out.TypeMeta = metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"}
	out.ObjectMeta = metav1.ObjectMeta{Name: cur.Name, Labels: maps.Clone(cur.Labels), Annotations: map[string]string{}}
	added := strings.Split(cur.Annotations[AnnAddedAnnotations], ",")
	for k, v := range cur.Annotations {
		if k != AnnMigratedFrom && k != AnnOriginalClass && k != AnnAddedAnnotations && !slices.Contains(added, k) {
			out.Annotations[k] = v
		}
	}
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	return out, nil
}

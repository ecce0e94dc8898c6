package apply

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csimigrate/csimigrate/rewrite"
)

// kindOf says what a live PV is, and why it is neither when it is
// rewrite.KindOther.
func (a *Writer) kindOf(pv *v1.PersistentVolume) (rewrite.Kind, string) {
	return rewrite.KindOf(a.tr, pv)
}

// identity is the CSI driver and volume handle of a PV: its own for a CSI
// PV, its translation's for an in-tree one. A rewrite and its undo keep it.
func (a *Writer) identity(pv *v1.PersistentVolume) (driver, handle string, err error) {
	if pv.Spec.CSI == nil {
		if pv, err = a.tr.TranslateInTreePVToCSI(a.logger, pv); err != nil {
			return "", "", err
		}
	}
	if pv.Spec.CSI == nil {
		return "", "", errors.New("no CSI source")
	}
	return pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle, nil
}

// checks is what the checks before the first write to a PV read, and the
// replacement they built.
type checks struct {
	uid types.UID
	sc  *storagev1.StorageClass
	pvc *v1.PersistentVolumeClaim
	// repl is the replacement; kept says why it ends with Retain where the
	// PV had Delete ("" when it keeps the policy).
	repl *v1.PersistentVolume
	kept string
	// adoption is what the rewrite decided for an RBD image (nil without
	// Ceph access, or for another plugin).
	adoption *adoption
}

// A direction is what a run replaces by what: the rewrite (an in-tree PV by
// its CSI form) or its undo (a CSI PV csimigrate created by the in-tree PV
// it came from). Both take pvSteps.
type direction struct {
	undo bool
	// what and command name the direction in messages, done says what
	// became of a target, and scope (aScope, with its article) names the
	// targets.
	what, command, done string
	scope, aScope       string
	// source is the kind of PV it replaces, target the kind it creates;
	// sourceWord and targetWord name them in the steps printed.
	source, target         rewrite.Kind
	sourceWord, targetWord string
	// check runs every check on the live source PV before the first write
	// and builds its replacement; a *rewrite.Refusal leaves it as it was.
	check func(a *Writer, ctx context.Context, cur *v1.PersistentVolume) (*checks, error)
	// build builds the replacement again from the source as it is now
	// (after step 1), with what check read.
	build func(a *Writer, cur *v1.PersistentVolume, c *checks) (repl *v1.PersistentVolume, kept string, err error)
}

var (
	rewriteDirection = &direction{what: "a rewrite", command: "rewrite -apply", done: "rewritten", scope: "in-tree", aScope: "an in-tree", source: rewrite.KindInTree, target: rewrite.KindRewritten,
		sourceWord: "in-tree", targetWord: "CSI", check: (*Writer).check, build: (*Writer).buildRewrite}
	undoDirection = &direction{undo: true, what: "an undo", command: "rewrite -apply -undo", done: "undone", scope: "rewritten", aScope: "a rewritten", source: rewrite.KindRewritten, target: rewrite.KindInTree,
		sourceWord: "CSI", targetWord: "in-tree", check: (*Writer).checkUndo, build: (*Writer).buildUndo}
)

func directionOf(undo bool) *direction {
	if undo {
		return undoDirection
	}
	return rewriteDirection
}

// direction is the direction of the applier's runs.
func (a *Writer) direction() *direction { return directionOf(a.undo) }

// buildRewrite is the CSI replacement of an in-tree PV.
func (a *Writer) buildRewrite(cur *v1.PersistentVolume, c *checks) (*v1.PersistentVolume, string, error) {
	r, err := rewrite.Rewrite(a.tr, a.logger, cur, c.sc, c.pvc)
	if err != nil {
		return nil, "", err
	}
	return a.adopted(r.CSI, r.KeptRetain(), c.adoption)
}

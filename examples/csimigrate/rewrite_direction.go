package main

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/translate"
)

// pvKind is what a live PV is to the rewrite and its undo.
type pvKind int

const (
	// pvOther is neither of the two: left alone.
	pvOther pvKind = iota
	// pvInTree is an in-tree PV that csimigrate translates.
	pvInTree
	// pvRewritten is a CSI PV that csimigrate's rewrite created
	// (AnnMigratedFrom names the in-tree plugin).
	pvRewritten
)

// kindOf says what a live PV is, and why it is neither when it is pvOther.
func (a *applier) kindOf(pv *v1.PersistentVolume) (pvKind, string) { return kindOf(a.tr, pv) }

// kindOf says what a PV is to the rewrite and its undo, and why it is
// neither when it is pvOther.
func kindOf(tr *translate.Translator, pv *v1.PersistentVolume) (pvKind, string) {
	switch {
	case pv.Spec.CSI != nil && pv.Annotations[AnnMigratedFrom] != "":
		return pvRewritten, ""
	case pv.Spec.CSI != nil:
		return pvOther, "a CSI PV csimigrate did not create"
	case plugin.InTreeNameOfPV(pv) != "" && tr.IsPVMigratable(pv):
		return pvInTree, ""
	}
	return pvOther, "neither an in-tree PV csimigrate translates nor a CSI PV it created"
}

// identity is the CSI driver and volume handle of a PV: its own for a CSI
// PV, its translation's for an in-tree one. A rewrite and its undo keep it.
func (a *applier) identity(pv *v1.PersistentVolume) (driver, handle string, err error) {
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
	source, target         pvKind
	sourceWord, targetWord string
	// check runs every check on the live source PV before the first write
	// and builds its replacement; a *refusal leaves it as it was.
	check func(a *applier, ctx context.Context, cur *v1.PersistentVolume) (*checks, error)
	// build builds the replacement again from the source as it is now
	// (after step 1), with what check read.
	build func(a *applier, cur *v1.PersistentVolume, c *checks) (repl *v1.PersistentVolume, kept string, err error)
}

var (
	rewriteDirection = &direction{what: "a rewrite", command: "rewrite -apply", done: "rewritten", scope: "in-tree", aScope: "an in-tree", source: pvInTree, target: pvRewritten,
		sourceWord: "in-tree", targetWord: "CSI", check: (*applier).check, build: (*applier).buildRewrite}
	undoDirection = &direction{undo: true, what: "an undo", command: "rewrite -apply -undo", done: "undone", scope: "rewritten", aScope: "a rewritten", source: pvRewritten, target: pvInTree,
		sourceWord: "CSI", targetWord: "in-tree", check: (*applier).checkUndo, build: (*applier).buildUndo}
)

func directionOf(undo bool) *direction {
	if undo {
		return undoDirection
	}
	return rewriteDirection
}

// direction is the direction of the applier's runs.
func (a *applier) direction() *direction { return directionOf(a.undo) }

// buildRewrite is the CSI replacement of an in-tree PV.
func (a *applier) buildRewrite(cur *v1.PersistentVolume, c *checks) (*v1.PersistentVolume, string, error) {
	r, err := replacement(a.tr, a.logger, cur, c.sc, c.pvc)
	if err != nil {
		return nil, "", err
	}
	return r.CSI, r.KeptRetain(), nil
}

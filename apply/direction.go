package apply

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/volumeid"
)

// kindOf says what a live PV is, and why it is neither when it is
// rewrite.KindOther.
func (a *Writer) kindOf(pv *v1.PersistentVolume) (rewrite.Kind, string) {
	if a.adopt {
		return adoptionKindOf(pv)
	}
	return rewrite.KindOf(a.tr, pv)
}

// The kinds of PV the adoption of CSI PVs replaces and creates.
const (
	// kindMigrated is a CSI PV of Ceph CSI's RBD driver with a migration
	// handle, or a static CSI PV of its CephFS driver, not adopted.
	kindMigrated rewrite.Kind = 100 + iota
	// kindAdopted is a PV adopted from such a PV (adopt.AnnAdoptedCSI).
	kindAdopted
)

// adoptionKindOf says what a PV is to the adoption of CSI PVs and its undo.
func adoptionKindOf(pv *v1.PersistentVolume) (rewrite.Kind, string) {
	switch {
	case pv == nil || pv.Spec.CSI == nil || plugin.InTreeNameOfDriver(pv.Spec.CSI.Driver) != plugin.RBDInTreePluginName && plugin.InTreeNameOfDriver(pv.Spec.CSI.Driver) != plugin.CephFSInTreePluginName:
		return rewrite.KindOther, "not a CSI PV of Ceph CSI's RBD or CephFS driver (" + plugin.RBDDriverName + ", " + plugin.CephFSDriverName + ", or those names after a prefix)"
	case pv.Annotations[adopt.AnnJournal] != "" && pv.Annotations[adopt.AnnAdoptedCSI] != "":
		return kindAdopted, ""
	case pv.Annotations[adopt.AnnJournal] != "":
		return rewrite.KindOther, "adopted when it was rewritten from an in-tree PV (the undo of the rewrite gives that back)"
	case plugin.InTreeNameOfDriver(pv.Spec.CSI.Driver) == plugin.CephFSInTreePluginName:
		if a := pv.Spec.CSI.VolumeAttributes; a["staticVolume"] == "true" && a["rootPath"] != "" {
			return kindMigrated, ""
		}
		return rewrite.KindOther, "not a static volume (attributes staticVolume and rootPath)"
	case volumeid.IsRBDHandle(pv.Spec.CSI.VolumeHandle):
		return kindMigrated, ""
	}
	return rewrite.KindOther, "its volume handle is not a migration handle"
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

// A Direction is what a Writer's runs replace by what: the rewrite (an
// in-tree PV by its CSI form), its undo (a CSI PV csimigrate created by the
// in-tree PV it came from), the adoption of CSI PVs (a migration-handle or
// static CephFS PV by the driver's own volume) and its undo. Its words are
// for messages; every direction takes pvSteps.
type Direction struct {
	// Undo: the direction gives back what another one made; AdoptCSI:
	// it adopts CSI PVs, or with Undo gives them their former form back
	// (Options.AdoptCSI).
	Undo, AdoptCSI bool
	// What names a run ("a rewrite"), Done what became of its targets
	// ("rewritten"), Scope the targets ("in-tree"; AScope with its
	// article).
	What, Done    string
	Scope, AScope string
	// Source is the kind of object it replaces (KindOf, ClassKindOf).
	Source rewrite.Kind
	// target is the kind of PV it creates; sourceWord and targetWord
	// name them in the steps printed.
	target                 rewrite.Kind
	sourceWord, targetWord string
	// check runs every check on the live source PV before the first write
	// and builds its replacement; a *rewrite.Refusal leaves it as it was.
	check func(a *Writer, ctx context.Context, cur *v1.PersistentVolume) (*checks, error)
	// build builds the replacement again from the source as it is now
	// (after step 1), with what check read.
	build func(a *Writer, cur *v1.PersistentVolume, c *checks) (repl *v1.PersistentVolume, kept string, err error)
}

var (
	adoptDirection = &Direction{AdoptCSI: true, What: "an adoption", Done: "adopted", Scope: "migration-handle or static CephFS", AScope: "a migration-handle or static CephFS",
		Source: kindMigrated, target: kindAdopted, sourceWord: "migration-handle", targetWord: "native", check: (*Writer).checkAdopt, build: (*Writer).buildAdopt}
	unadoptDirection = &Direction{Undo: true, AdoptCSI: true, What: "an undo of an adoption", Done: "given back their migration handle or static form", Scope: "adopted", AScope: "an adopted",
		Source: kindAdopted, target: kindMigrated, sourceWord: "native", targetWord: "migration-handle", check: (*Writer).checkUnadopt, build: (*Writer).buildUnadopt}
	rewriteDirection = &Direction{What: "a rewrite", Done: "rewritten", Scope: "in-tree", AScope: "an in-tree", Source: rewrite.KindInTree, target: rewrite.KindRewritten,
		sourceWord: "in-tree", targetWord: "CSI", check: (*Writer).check, build: (*Writer).buildRewrite}
	undoDirection = &Direction{Undo: true, What: "an undo", Done: "undone", Scope: "rewritten", AScope: "a rewritten", Source: rewrite.KindRewritten, target: rewrite.KindInTree,
		sourceWord: "CSI", targetWord: "in-tree", check: (*Writer).checkUndo, build: (*Writer).buildUndo}
)

// DirectionOf is the direction of a Writer with those Options (Undo,
// AdoptCSI).
func DirectionOf(undo, adoptCSI bool) *Direction {
	if adoptCSI {
		return adoptionDirectionOf(undo)
	}
	return directionOf(undo)
}

// Direction is the direction of the Writer's runs.
func (a *Writer) Direction() *Direction { return DirectionOf(a.undo, a.adopt) }

func directionOf(undo bool) *Direction {
	if undo {
		return undoDirection
	}
	return rewriteDirection
}

func adoptionDirectionOf(undo bool) *Direction {
	if undo {
		return unadoptDirection
	}
	return adoptDirection
}

// name is how a saved state names the direction ("" for the rewrite and
// its undo, which the state's Undo tells apart).
func (d *Direction) name() string {
	switch d {
	case adoptDirection:
		return "adopt"
	case unadoptDirection:
		return "unadopt"
	}
	return ""
}

// directionNamed is the direction a saved state names.
func directionNamed(name string, undo bool) *Direction {
	switch name {
	case "adopt", "unadopt":
		return adoptionDirectionOf(undo)
	}
	return directionOf(undo)
}

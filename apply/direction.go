package apply

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
	"github.com/csimigrate/csimigrate/volumeid"
)

// pvKind is what a PV (or a StorageClass) is to the Writer's directions:
// the kinds of the rewrite and its undo (rewrite.Kind), and those of the
// adoption of CSI PVs and its undo.
type pvKind int

const (
	// kindOther is none of the others.
	kindOther pvKind = iota
	// kindInTree and kindRewritten are rewrite.KindInTree and
	// rewrite.KindRewritten.
	kindInTree
	kindRewritten
	// kindMigrated is a CSI PV of Ceph CSI's RBD driver with a migration
	// handle, or a static CSI PV of its CephFS driver, not adopted.
	kindMigrated
	// kindAdopted is a PV adopted from such a PV (adopt.AnnAdoptedCSI).
	kindAdopted
)

// rewriteKind is what k, a kind of the rewrite's, is to the directions.
func rewriteKind(k rewrite.Kind) pvKind {
	switch k {
	case rewrite.KindInTree:
		return kindInTree
	case rewrite.KindRewritten:
		return kindRewritten
	}
	return kindOther
}

// kindOf says what a live PV is to the direction d (as tr translates it),
// and why it is neither when it is kindOther.
func (d Direction) kindOf(tr *translate.Translator, pv *v1.PersistentVolume) (pvKind, string) {
	if d.AdoptsCSI() {
		return adoptionKindOf(pv)
	}
	k, why := rewrite.KindOf(tr, pv)
	return rewriteKind(k), why
}

// kindOf says what a live PV is to the Writer's direction.
func (a *Writer) kindOf(pv *v1.PersistentVolume) (pvKind, string) {
	return a.o.Direction.kindOf(a.tr, pv)
}

// ReplacesPV reports whether pv is one the direction replaces, as tr
// translates it.
func (d Direction) ReplacesPV(tr *translate.Translator, pv *v1.PersistentVolume) bool {
	k, _ := d.kindOf(tr, pv)
	return k == d.of().source
}

// ReplacesClass reports whether sc is a StorageClass the direction
// replaces, as tr translates it (none for the adoption of CSI PVs).
func (d Direction) ReplacesClass(tr *translate.Translator, sc *storagev1.StorageClass) bool {
	return !d.AdoptsCSI() && rewriteKind(rewrite.ClassKindOf(tr, sc)) == d.of().source
}

// adoptionKindOf says what a PV is to the adoption of CSI PVs and its undo.
func adoptionKindOf(pv *v1.PersistentVolume) (pvKind, string) {
	switch {
	case pv == nil || pv.Spec.CSI == nil || plugin.InTreeNameOfDriver(pv.Spec.CSI.Driver) != plugin.RBDInTreePluginName && plugin.InTreeNameOfDriver(pv.Spec.CSI.Driver) != plugin.CephFSInTreePluginName:
		return kindOther, "not a CSI PV of Ceph CSI's RBD or CephFS driver (" + plugin.RBDDriverName + ", " + plugin.CephFSDriverName + ", or those names after a prefix)"
	case pv.Annotations[adopt.AnnJournal] != "" && pv.Annotations[adopt.AnnAdoptedCSI] != "":
		return kindAdopted, ""
	case pv.Annotations[adopt.AnnJournal] != "":
		return kindOther, "adopted when it was rewritten from an in-tree PV (the undo of the rewrite gives that back)"
	case plugin.InTreeNameOfDriver(pv.Spec.CSI.Driver) == plugin.CephFSInTreePluginName:
		if a := pv.Spec.CSI.VolumeAttributes; a["staticVolume"] == "true" && a["rootPath"] != "" {
			return kindMigrated, ""
		}
		return kindOther, "not a static volume (attributes staticVolume and rootPath)"
	case volumeid.IsRBDHandle(pv.Spec.CSI.VolumeHandle):
		return kindMigrated, ""
	}
	return kindOther, "its volume handle is not a migration handle"
}

// Identity is the CSI driver and volume handle of a PV: its own for a CSI
// PV, its translation's for an in-tree one (an error when it has none). A
// rewrite and its undo keep it, and the saved state records it: a program
// that waits for a PV's driver asks this, as the Writer does.
func (a *Writer) Identity(pv *v1.PersistentVolume) (driver, handle string, err error) {
	if pv == nil {
		return "", "", errors.New("no PV")
	}
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

// A Direction is what a Writer's runs replace by what; the zero value is
// the rewrite. Every direction takes the same steps (pvSteps, classSteps);
// the direction decides which PVs are its sources, how their replacements
// are checked and built, and the words of its messages.
type Direction int

// The four directions.
const (
	// Rewrite replaces in-tree PVs and StorageClasses by their CSI forms.
	Rewrite Direction = iota
	// Undo replaces the CSI PVs and StorageClasses csimigrate's rewrite
	// created by the in-tree objects they replaced.
	Undo
	// AdoptCSI replaces CSI PVs of Ceph CSI's RBD driver that have a
	// migration handle (an earlier rewrite's, or Kubernetes' own
	// migration's), and static CSI PVs of its CephFS driver (with
	// Options.CephFSSecret), by the driver's own volumes. Needs
	// Options.Ceph.
	AdoptCSI
	// UnadoptCSI gives PVs AdoptCSI adopted their migration handle or
	// static form back. Needs Options.Ceph.
	UnadoptCSI
)

// direction is what a Direction is to the Writer: its words and how its
// replacements are checked and built.
type direction struct {
	name string
	// what names a run ("a rewrite"), done what became of its targets
	// ("rewritten"), scope the targets ("in-tree"; aScope with its
	// article).
	what, done    string
	scope, aScope string
	// source is the kind of object it replaces, target the kind of PV it
	// creates; sourceWord and targetWord name them in the steps printed.
	source, target         pvKind
	sourceWord, targetWord string
	// check runs every check on the live source PV before the first write
	// and builds its replacement; a *rewrite.Refusal leaves it as it was.
	check func(a *Writer, ctx context.Context, cur *v1.PersistentVolume) (*checkedPV, error)
	// build builds the replacement again from the source as it is now
	// (after step 1), with what check read.
	build func(a *Writer, cur *v1.PersistentVolume, c *checkedPV) (repl *v1.PersistentVolume, kept string, err error)
}

var directions = [...]direction{
	Rewrite: {name: "rewrite", what: "a rewrite", done: "rewritten", scope: "in-tree", aScope: "an in-tree", source: kindInTree, target: kindRewritten,
		sourceWord: "in-tree", targetWord: "CSI", check: (*Writer).check, build: (*Writer).buildRewrite},
	Undo: {name: "undo", what: "an undo", done: "undone", scope: "rewritten", aScope: "a rewritten", source: kindRewritten, target: kindInTree,
		sourceWord: "CSI", targetWord: "in-tree", check: (*Writer).checkUndo, build: (*Writer).buildUndo},
	AdoptCSI: {name: "adopt", what: "an adoption", done: "adopted", scope: "migration-handle or static CephFS", aScope: "a migration-handle or static CephFS",
		source: kindMigrated, target: kindAdopted, sourceWord: "migration-handle", targetWord: "native", check: (*Writer).checkAdopt, build: (*Writer).buildAdopt},
	UnadoptCSI: {name: "unadopt", what: "an undo of an adoption", done: "given back their migration handle or static form", scope: "adopted", aScope: "an adopted",
		source: kindAdopted, target: kindMigrated, sourceWord: "native", targetWord: "migration-handle", check: (*Writer).checkUnadopt, build: (*Writer).buildUnadopt},
}

// of is what d is to the Writer; an unknown Direction is the rewrite's
// (New refuses one).
func (d Direction) of() *direction {
	if d.valid() {
		return &directions[d]
	}
	return &directions[Rewrite]
}

func (d Direction) valid() bool { return d >= 0 && int(d) < len(directions) }

// String is the direction's name: "rewrite", "undo", "adopt", "unadopt".
func (d Direction) String() string {
	if !d.valid() {
		return fmt.Sprintf("Direction(%d)", int(d))
	}
	return directions[d].name
}

// IsUndo reports whether the direction gives back what another one made
// (Undo, UnadoptCSI).
func (d Direction) IsUndo() bool { return d == Undo || d == UnadoptCSI }

// AdoptsCSI reports whether the direction adopts CSI PVs or gives them their
// former form back (AdoptCSI, UnadoptCSI).
func (d Direction) AdoptsCSI() bool { return d == AdoptCSI || d == UnadoptCSI }

// Reverse is the direction that gives back what d makes.
func (d Direction) Reverse() Direction {
	switch d {
	case Undo:
		return Rewrite
	case AdoptCSI:
		return UnadoptCSI
	case UnadoptCSI:
		return AdoptCSI
	}
	return Undo
}

// What names a run of the direction: "a rewrite", "an undo", "an adoption",
// "an undo of an adoption".
func (d Direction) What() string { return d.of().what }

// Done says what became of a run's targets: "rewritten", "undone", ...
func (d Direction) Done() string { return d.of().done }

// Scope names the direction's targets ("in-tree"), AScope with its article
// ("an in-tree").
func (d Direction) Scope() string { return d.of().scope }

// AScope is Scope with its article.
func (d Direction) AScope() string { return d.of().aScope }

// Direction is the direction of the Writer's runs.
func (a *Writer) Direction() Direction { return a.o.Direction }

// directionNamed is the direction a saved state names: its direction
// ("adopt", "unadopt" or "" for the rewrite and its undo) and its undo.
func directionNamed(name string, undo bool) Direction {
	d := Rewrite
	if name == "adopt" || name == "unadopt" {
		d = AdoptCSI
	}
	if undo {
		d = d.Reverse()
	}
	return d
}

// stateName is how a saved state names the direction ("" for the rewrite
// and its undo, which the state's Undo tells apart).
func (d Direction) stateName() string {
	if d.AdoptsCSI() {
		return d.String()
	}
	return ""
}

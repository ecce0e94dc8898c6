package rewrite

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/translate"
)

// Kind is what a PV or a StorageClass is to the rewrite and its undo.
type Kind int

const (
	// KindOther is neither of the two: left alone.
	KindOther Kind = iota
	// KindInTree is an in-tree PV or class that csimigrate translates: what
	// the rewrite replaces and the undo creates.
	KindInTree
	// KindRewritten is a CSI PV or class that csimigrate's rewrite created
	// (AnnMigratedFrom names the in-tree plugin): what the undo replaces.
	KindRewritten
)

// KindOf says what a PV is to the rewrite and its undo, and why it is
// neither when it is KindOther. A nil PV is KindOther.
func KindOf(tr *translate.Translator, pv *v1.PersistentVolume) (Kind, string) {
	switch {
	case pv == nil:
		return KindOther, "no PV"
	case pv.Spec.CSI != nil && pv.Annotations[AnnMigratedFrom] != "":
		return KindRewritten, ""
	case pv.Spec.CSI != nil:
		return KindOther, "a CSI PV csimigrate did not create"
	case tr != nil && plugin.InTreeNameOfPV(pv) != "" && tr.IsPVMigratable(pv):
		return KindInTree, ""
	}
	return KindOther, "neither an in-tree PV csimigrate translates nor a CSI PV it created"
}

// ClassKindOf says what a StorageClass is to the rewrite and its undo: an
// in-tree class csimigrate translates, a CSI class its rewrite created, or
// neither. A nil class is KindOther.
func ClassKindOf(tr *translate.Translator, sc *storagev1.StorageClass) Kind {
	switch {
	case sc == nil || tr == nil:
		return KindOther
	case TranslatableClass(tr, sc):
		return KindInTree
	case sc.Annotations[AnnMigratedFrom] != "":
		return KindRewritten
	}
	return KindOther
}

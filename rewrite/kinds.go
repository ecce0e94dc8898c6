package rewrite

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/internal/pvcopy"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/cephfs"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/translate"
)

// AnnOriginalClass records, on a CSI StorageClass the rewrite created, the
// in-tree class it replaced: a StorageClass in JSON without its metadata
// (provisioner, parameters and every field the translation may change). The
// undo creates that class again, with the CSI class's name, labels and
// annotations.
const AnnOriginalClass = "csimigrate.io/original-storageclass"

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

// Rewrite builds the CSI PV that replaces an in-tree PV: its translation
// with what Replacement adds (the live class and claim where known, nil
// otherwise). It does not modify its arguments.
func Rewrite(tr *translate.Translator, logger klog.Logger, pv *v1.PersistentVolume, sc *storagev1.StorageClass, pvc *v1.PersistentVolumeClaim) (PV, error) {
	if tr == nil || pv == nil {
		return PV{}, errors.New("no translator or no PV")
	}
	csi, findings, inTree, err := tr.TranslateAndCheckPV(logger, pv)
	if err != nil {
		return PV{}, err
	}
	return replacement(tr, logger, pv, csi, findings, inTree, sc, pvc)
}

// RewriteAdopted is Rewrite for an in-tree PV whose volume its rewrite
// adopts into Ceph CSI's journal (package adopt): the replacement of a
// driver's own volume, without the migration handle's hazards. The journal
// names the image, not the handle, so Ceph CSI's delete finds exactly it;
// an adopted subvolume is deleted by Ceph CSI as the provisioner that made
// it was, so the static volume's Retain does not apply.
func RewriteAdopted(tr *translate.Translator, logger klog.Logger, pv *v1.PersistentVolume, sc *storagev1.StorageClass, pvc *v1.PersistentVolumeClaim) (PV, error) {
	if tr == nil || pv == nil {
		return PV{}, errors.New("no translator or no PV")
	}
	csi, findings, inTree, err := tr.TranslateAndCheckPV(logger, pv)
	if err != nil {
		return PV{}, err
	}
	findings = slices.DeleteFunc(findings, func(f plugin.Finding) bool {
		return f.Code == rbd.FindingHandleResolvesElsewhere || f.Code == cephfs.FindingNeverDeleted
	})
	return replacement(tr, logger, pv, csi, findings, inTree, sc, pvc)
}

// keepClaimRef gives a replacement the claimRef's resourceVersion of the PV
// it replaces (cleanPV clears it): the binder wrote it there, and the undo
// gives it back.
func keepClaimRef(repl, pv *v1.PersistentVolume) {
	if repl.Spec.ClaimRef != nil && pv.Spec.ClaimRef != nil {
		repl.Spec.ClaimRef.ResourceVersion = pv.Spec.ClaimRef.ResourceVersion
	}
}

// UndoReplacement is the in-tree PV that a CSI PV csimigrate's rewrite
// created came from: the library's reverse translation (which gives back
// the original pv.kubernetes.io/provisioned-by), without what the rewrite
// added, with reclaim policy Retain until the last step and the policy
// before the rewrite recorded for it in AnnReclaimPolicy. A PV without
// AnnPreRewritePolicy is refused (CodeNotRecorded). It does not modify cur.
func UndoReplacement(tr *translate.Translator, cur *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	if tr == nil || cur == nil {
		return nil, errors.New("no translator or no PV")
	}
	policy, ok := cur.Annotations[AnnPreRewritePolicy]
	if !ok {
		return nil, &Refusal{Code: CodeNotRecorded, Reason: "it has no annotation " + AnnPreRewritePolicy + " (an earlier csimigrate rewrote it without recording the reclaim policy and annotations to restore)",
			Remedy: "add the annotations " + AnnPreRewritePolicy + " (the policy before the rewrite) and, if the rewrite added external-provisioner's deletion-secret annotations, " + AnnAddedAnnotations + " naming them"}
	}
	src := cur
	// An adopted PV (package adopt) goes back to its migration handle
	// first: the in-tree form is that of the PV it replaced.
	if prev, _, ok, err := adopt.Unadopted(cur); ok {
		if err != nil {
			return nil, fmt.Errorf("the adopted volume's record: %w", err)
		}
		src = prev
	}
	in, err := tr.TranslateCSIPVToInTree(src.DeepCopy())
	if err == nil && plugin.InTreeNameOfPV(in) == "" {
		err = fmt.Errorf("the reverse translation gave no in-tree source")
	}
	if err != nil {
		return nil, fmt.Errorf("the volume has no in-tree form: %w", err)
	}
	pvcopy.ClearServerFields(in)
	keepClaimRef(in, cur)
	dropServedModes(in)
	in.Finalizers = nil
	for k := range strings.SplitSeq(cur.Annotations[AnnAddedAnnotations], ",") {
		delete(in.Annotations, k)
	}
	for _, k := range []string{AnnMigratedFrom, AnnPreRewritePolicy, AnnAddedAnnotations} {
		delete(in.Annotations, k)
	}
	if in.Annotations == nil {
		in.Annotations = map[string]string{}
	}
	in.Annotations[AnnReclaimPolicy] = policy
	in.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
	return in, nil
}

// dropServedModes removes from the in-tree form of a rewritten PV the
// overrides annotation that records only its access modes, as
// KeepServedModes kept them: the in-tree PV had those modes itself, so the
// undo gives it back as it was.
func dropServedModes(in *v1.PersistentVolume) {
	raw, ok := in.Annotations[plugin.AnnCSIOverrides]
	if !ok || in.Spec.RBD == nil {
		return
	}
	var o map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &o) != nil || len(o) != 1 {
		return
	}
	var modes []v1.PersistentVolumeAccessMode
	if json.Unmarshal(o["accessModes"], &modes) != nil || !slices.Equal(modes, in.Spec.AccessModes) || len(modes) == 0 {
		return
	}
	if !ServedAsTheyAre(in) {
		return // not what KeepServedModes keeps
	}
	delete(in.Annotations, plugin.AnnCSIOverrides)
}

// ClassReplacement is the class that replaces an in-tree StorageClass, as
// rewrite -apply creates it and rewrite prints it for review: same name,
// labels and annotations (the default-class one included), the CSI
// provisioner and translated parameters, and the in-tree class recorded in
// AnnOriginalClass for the undo. It does not modify sc.
func ClassReplacement(tr *translate.Translator, logger klog.Logger, sc *storagev1.StorageClass) (*storagev1.StorageClass, error) {
	if tr == nil || sc == nil {
		return nil, errors.New("no translator or no StorageClass")
	}
	in := InTreeClass(sc)
	out, err := tr.TranslateInTreeStorageClassToCSI(logger, in.Provisioner, in)
	if err != nil {
		return nil, err
	}
	out.ResourceVersion, out.UID, out.CreationTimestamp, out.ManagedFields, out.Generation = "", "", metav1.Time{}, nil, 0
	//lint:ignore SA1019 clearing the deprecated field is the point
	out.SelfLink = ""
	out.TypeMeta = metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	var added []string
	for _, k := range slices.Sorted(maps.Keys(out.Annotations)) {
		if _, ok := sc.Annotations[k]; !ok {
			added = append(added, k)
		}
	}
	if len(added) > 0 {
		// What the undo removes again.
		out.Annotations[AnnAddedAnnotations] = strings.Join(added, ",")
	}
	out.Annotations[AnnMigratedFrom] = sc.Provisioner
	orig, err := json.Marshal(storagev1.StorageClass{Provisioner: sc.Provisioner, Parameters: sc.Parameters, ReclaimPolicy: sc.ReclaimPolicy,
		MountOptions: sc.MountOptions, AllowVolumeExpansion: sc.AllowVolumeExpansion, VolumeBindingMode: sc.VolumeBindingMode, AllowedTopologies: sc.AllowedTopologies})
	if err != nil {
		return nil, err
	}
	out.Annotations[AnnOriginalClass] = string(orig)
	return out, nil
}

// ClassUndoReplacement is the in-tree class a CSI class csimigrate created
// replaced: the one recorded in AnnOriginalClass, with the CSI class's name,
// labels and annotations (without those the rewrite added, listed in
// AnnAddedAnnotations: an annotation an admin changed since is kept). A
// class without the record is refused (CodeNotRecorded). It does not modify
// cur.
func ClassUndoReplacement(cur *storagev1.StorageClass) (*storagev1.StorageClass, error) {
	if cur == nil {
		return nil, errors.New("no StorageClass")
	}
	raw, ok := cur.Annotations[AnnOriginalClass]
	if !ok {
		return nil, &Refusal{Code: CodeNotRecorded, Reason: "it has no annotation " + AnnOriginalClass + " (an earlier csimigrate replaced the class without recording it)",
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

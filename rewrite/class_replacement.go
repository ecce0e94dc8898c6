package rewrite

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/translate"
)

// AnnOriginalClass records, on a CSI StorageClass the rewrite created, the
// in-tree class it replaced: a StorageClass in JSON without its metadata
// (provisioner, parameters and every field the translation may change). The
// undo creates that class again, with the CSI class's name, labels and
// annotations.
const AnnOriginalClass = "csimigrate.io/original-storageclass"

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

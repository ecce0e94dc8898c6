package plugins

import (
	"encoding/json"
	"fmt"
	"maps"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
)

// AnnCSIOverrides carries, on an in-tree PV produced by a reverse translation,
// the parts of the original CSI PV that a forward translation of the in-tree
// PV would not reproduce: a volume handle, volume attributes, readOnly, fsType,
// secret references (the node-expand one above all: in-tree sources have no
// field for it) and access modes. A forward translation applies and removes
// it, so CSI -> in-tree -> CSI gives the original CSI source back.
//
// This is what lets a CSI PV survive external-provisioner's round trip through
// a migrated in-tree StorageClass: the provisioner translates the new CSI PV
// back to in-tree before storing it, and every later forward translation
// restores the references it had.
//
// The value is a JSON object with the optional members "volumeHandle",
// "readOnly", "fsType", "volumeAttributes" (a map; null removes an attribute),
// "secretRefs" (a map from "nodeStage", "nodePublish", "controllerPublish",
// "controllerExpand", "nodeExpand" to a SecretReference or null) and
// "accessModes".
const AnnCSIOverrides = "csimigrate.io/csi-overrides"

type csiOverrides struct {
	VolumeHandle     *string                          `json:"volumeHandle,omitempty"`
	ReadOnly         *bool                            `json:"readOnly,omitempty"`
	FSType           *string                          `json:"fsType,omitempty"`
	VolumeAttributes map[string]*string               `json:"volumeAttributes,omitempty"`
	SecretRefs       map[string]*v1.SecretReference   `json:"secretRefs,omitempty"`
	AccessModes      *[]v1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`
}

func (o *csiOverrides) empty() bool {
	return o.VolumeHandle == nil && o.ReadOnly == nil && o.FSType == nil && len(o.VolumeAttributes) == 0 &&
		len(o.SecretRefs) == 0 && o.AccessModes == nil
}

func secretRefSlots(c *v1.CSIPersistentVolumeSource) map[string]**v1.SecretReference {
	return map[string]**v1.SecretReference{
		"nodeStage":         &c.NodeStageSecretRef,
		"nodePublish":       &c.NodePublishSecretRef,
		"controllerPublish": &c.ControllerPublishSecretRef,
		"controllerExpand":  &c.ControllerExpandSecretRef,
		"nodeExpand":        &c.NodeExpandSecretRef,
	}
}

// ForwardFunc is a forward PV translation, as used by [FinishReverse].
type ForwardFunc func(logger klog.Logger, pv *v1.PersistentVolume) (*v1.PersistentVolume, error)

// FinishReverse completes a reverse translation. inTree is the candidate
// in-tree PV a plugin restored from csiPV (owned by the caller, modified
// here); forward is the plugin's forward translation. FinishReverse
// translates inTree forward again and records in [AnnCSIOverrides] whatever
// differs from csiPV's CSI source and access modes, so that forward
// translation of the result gives csiPV's CSI source back exactly.
func FinishReverse(inTree, csiPV *v1.PersistentVolume, forward ForwardFunc) error {
	TakeAnnotation(inTree, AnnCSIOverrides)
	got, err := forward(klog.Background().V(100), inTree)
	if err != nil {
		return fmt.Errorf("checking the reverse translation: %w", err)
	}
	want := csiPV.Spec.CSI
	have := got.Spec.CSI
	var o csiOverrides
	if want.VolumeHandle != have.VolumeHandle {
		o.VolumeHandle = &want.VolumeHandle
	}
	if want.ReadOnly != have.ReadOnly {
		o.ReadOnly = &want.ReadOnly
	}
	if want.FSType != have.FSType {
		o.FSType = &want.FSType
	}
	for k, v := range want.VolumeAttributes {
		if hv, ok := have.VolumeAttributes[k]; !ok || hv != v {
			if o.VolumeAttributes == nil {
				o.VolumeAttributes = map[string]*string{}
			}
			o.VolumeAttributes[k] = &v
		}
	}
	for k := range have.VolumeAttributes {
		if _, ok := want.VolumeAttributes[k]; !ok {
			if o.VolumeAttributes == nil {
				o.VolumeAttributes = map[string]*string{}
			}
			o.VolumeAttributes[k] = nil
		}
	}
	wantRefs, haveRefs := secretRefSlots(want), secretRefSlots(have)
	for k, w := range wantRefs {
		if !equality.Semantic.DeepEqual(*w, *haveRefs[k]) {
			if o.SecretRefs == nil {
				o.SecretRefs = map[string]*v1.SecretReference{}
			}
			o.SecretRefs[k] = *w
		}
	}
	if !equalModes(csiPV.Spec.AccessModes, got.Spec.AccessModes) {
		modes := csiPV.Spec.AccessModes
		if modes == nil {
			modes = []v1.PersistentVolumeAccessMode{}
		}
		o.AccessModes = &modes
	}
	if o.empty() {
		return nil
	}
	b, err := json.Marshal(&o)
	if err != nil {
		return err
	}
	SetAnnotation(inTree, AnnCSIOverrides, string(b))
	return nil
}

// ApplyOverrides applies and removes [AnnCSIOverrides] on out, a PV that a
// forward translation produced. An unreadable annotation is an error that
// names it.
func ApplyOverrides(out *v1.PersistentVolume) error {
	raw, ok := TakeAnnotation(out, AnnCSIOverrides)
	if !ok {
		return nil
	}
	var o csiOverrides
	if err := json.Unmarshal([]byte(raw), &o); err != nil {
		return Invalid("PersistentVolume", out.Name, field.Invalid(
			field.NewPath("metadata", "annotations").Key(AnnCSIOverrides), raw,
			"must be the JSON object a reverse translation by csimigrate writes: "+err.Error()))
	}
	c := out.Spec.CSI
	if o.VolumeHandle != nil {
		c.VolumeHandle = *o.VolumeHandle
	}
	if o.ReadOnly != nil {
		c.ReadOnly = *o.ReadOnly
	}
	if o.FSType != nil {
		c.FSType = *o.FSType
	}
	if len(o.VolumeAttributes) > 0 {
		attrs := maps.Clone(c.VolumeAttributes)
		if attrs == nil {
			attrs = make(map[string]string, len(o.VolumeAttributes))
		}
		for k, v := range o.VolumeAttributes {
			if v == nil {
				delete(attrs, k)
			} else {
				attrs[k] = *v
			}
		}
		if len(attrs) == 0 {
			attrs = nil
		}
		c.VolumeAttributes = attrs
	}
	slots := secretRefSlots(c)
	for k, ref := range o.SecretRefs {
		slot, ok := slots[k]
		if !ok {
			return Invalid("PersistentVolume", out.Name, field.NotSupported(
				field.NewPath("metadata", "annotations").Key(AnnCSIOverrides).Child("secretRefs"), k,
				[]string{"controllerExpand", "controllerPublish", "nodeExpand", "nodePublish", "nodeStage"}))
		}
		*slot = CopySecretRef(ref)
	}
	if o.AccessModes != nil {
		if len(*o.AccessModes) == 0 {
			out.Spec.AccessModes = nil
		} else {
			out.Spec.AccessModes = *o.AccessModes
		}
	}
	return nil
}

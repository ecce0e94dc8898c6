package plugins

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
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

// AnnOriginalVolumeHandle is set on a CSI PV by the forward translation of
// a plugin whose in-tree plugin csi-translation-lib also translates (RBD,
// vSphere), when [AnnCSIOverrides] recorded a volume handle other than the
// one csi-translation-lib computes for the same in-tree PV. The PV gets the
// stock handle, so that every component agrees on the VolumeAttachment name
// and the kubelet's volume name whichever library it runs, and the recorded
// handle is kept here; a reverse translation records it again. See
// [KeepStockHandle].
const AnnOriginalVolumeHandle = "csimigrate.io/original-volume-handle"

// AnnOriginalProvisionedBy records, on a CSI PV that replaced an in-tree PV
// (csimigrate rewrite), the in-tree PV's pv.kubernetes.io/provisioned-by
// ("" when it had none): the replacement names its CSI driver there, which
// external-provisioner requires before it deletes a released volume. A
// reverse translation restores the original.
const AnnOriginalProvisionedBy = "csimigrate.io/original-provisioned-by"

// annProvisionedBy is the annotation provisioners and the PV controller
// decide ownership on.
const annProvisionedBy = "pv.kubernetes.io/provisioned-by"

type csiOverrides struct {
	VolumeHandle     *string                          `json:"volumeHandle,omitempty"`
	ReadOnly         *bool                            `json:"readOnly,omitempty"`
	FSType           *string                          `json:"fsType,omitempty"`
	VolumeAttributes map[string]*string               `json:"volumeAttributes,omitempty"`
	SecretRefs       map[string]*v1.SecretReference   `json:"secretRefs,omitempty"`
	AccessModes      *[]v1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`
}

// ForwardFunc is a forward PV translation, as used by [FinishReverse].
type ForwardFunc func(logger klog.Logger, pv *v1.PersistentVolume) (*v1.PersistentVolume, error)

// Attribute is one volume attribute.
type Attribute struct {
	Key, Value string
}

// Forwarded describes what a plugin's forward translation of an in-tree PV
// sets in the CSI source and the access modes, without building them, for
// [FinishReverseFrom]. The pointers and slices are only read.
type Forwarded struct {
	VolumeHandle string
	ReadOnly     bool
	FSType       string
	// Attributes are the volume attributes, each key once.
	Attributes []Attribute
	// The secret references, nil when unset.
	NodeStage, NodePublish, ControllerPublish, ControllerExpand, NodeExpand *v1.SecretReference
	// AccessModes are the PV's access modes after translation.
	AccessModes []v1.PersistentVolumeAccessMode
}

// Attr returns the value of attribute key.
func (f *Forwarded) Attr(key string) (string, bool) {
	for _, a := range f.Attributes {
		if a.Key == key {
			return a.Value, true
		}
	}
	return "", false
}

// AttributeMap returns attrs as a new map, nil when there are none.
func AttributeMap(attrs []Attribute) map[string]string {
	if len(attrs) == 0 {
		return nil
	}
	m := make(map[string]string, len(attrs))
	for _, a := range attrs {
		m[a.Key] = a.Value
	}
	return m
}

// FinishReverse completes a reverse translation. inTree is the candidate
// in-tree PV a plugin restored from csiPV (owned by the caller, modified
// here); forward is the plugin's forward translation. FinishReverse
// translates inTree forward again and records in [AnnCSIOverrides] whatever
// differs from csiPV's CSI source and access modes, so that forward
// translation of the result gives csiPV's CSI source back exactly.
// [FinishReverseFrom] does the same without running the forward translation.
func FinishReverse(inTree, csiPV *v1.PersistentVolume, forward ForwardFunc) error {
	TakeAnnotation(inTree, AnnCSIOverrides)
	got, err := forward(klog.Background().V(100), inTree)
	if err != nil {
		return fmt.Errorf("checking the reverse translation: %w", err)
	}
	have := got.Spec.CSI
	f := Forwarded{VolumeHandle: have.VolumeHandle, ReadOnly: have.ReadOnly, FSType: have.FSType,
		NodeStage: have.NodeStageSecretRef, NodePublish: have.NodePublishSecretRef, ControllerPublish: have.ControllerPublishSecretRef,
		ControllerExpand: have.ControllerExpandSecretRef, NodeExpand: have.NodeExpandSecretRef, AccessModes: got.Spec.AccessModes}
	for k, v := range have.VolumeAttributes {
		f.Attributes = append(f.Attributes, Attribute{k, v})
	}
	return FinishReverseFrom(inTree, csiPV, &f)
}

// FinishReverseFrom completes a reverse translation as [FinishReverse] does,
// given what the plugin's forward translation of inTree (without
// [AnnCSIOverrides], which is removed here) would set. When that is csiPV's
// CSI source and access modes, as for every PV a forward translation
// produced, it only removes the annotation.
//
// A CSI PV that carries [AnnOriginalVolumeHandle] and the handle the forward
// translation computes has that annotation's handle recorded instead; one
// that carries [AnnOriginalProvisionedBy] gets its original
// pv.kubernetes.io/provisioned-by back.
func FinishReverseFrom(inTree, csiPV *v1.PersistentVolume, f *Forwarded) error {
	TakeAnnotation(inTree, AnnCSIOverrides)
	want := csiPV.Spec.CSI
	var o overrides
	if by, ok := TakeAnnotation(inTree, AnnOriginalProvisionedBy); ok {
		TakeAnnotation(inTree, annProvisionedBy)
		if by != "" {
			SetAnnotation(inTree, annProvisionedBy, by)
		}
	}
	original, hasOriginal := TakeAnnotation(inTree, AnnOriginalVolumeHandle)
	switch {
	case want.VolumeHandle != f.VolumeHandle:
		o.volumeHandle = &want.VolumeHandle
	case hasOriginal && original != f.VolumeHandle:
		o.volumeHandle = &original
	}
	if want.ReadOnly != f.ReadOnly {
		o.readOnly = &want.ReadOnly
	}
	if want.FSType != f.FSType {
		o.fsType = &want.FSType
	}
	var attrs [16]attrOverride
	o.attrs = attrs[:0]
	// One pass over the CSI attributes, each looked up among the (few)
	// forwarded ones; the forwarded ones it did not meet are removed.
	var met [64]bool
	for k, v := range want.VolumeAttributes {
		i := slices.IndexFunc(f.Attributes, func(a Attribute) bool { return a.Key == k })
		switch {
		case i < 0:
			o.attrs = append(o.attrs, attrOverride{key: k, value: v})
		case i < len(met):
			met[i] = true
			fallthrough
		default:
			if f.Attributes[i].Value != v {
				o.attrs = append(o.attrs, attrOverride{key: k, value: v})
			}
		}
	}
	for i, a := range f.Attributes {
		if i < len(met) {
			if met[i] {
				continue
			}
		} else if _, ok := want.VolumeAttributes[a.Key]; ok {
			continue
		}
		o.attrs = append(o.attrs, attrOverride{key: a.Key, remove: true})
	}
	sortAttrs(o.attrs)
	// In the order of their names, as the JSON object is written. (f's
	// references are only compared: kept apart from what is stored, they
	// let f, and the attributes it points to, stay on the caller's stack.)
	var refs [5]refOverride
	o.refs = refs[:0]
	o.refs = appendRefOverride(o.refs, "controllerExpand", want.ControllerExpandSecretRef, f.ControllerExpand)
	o.refs = appendRefOverride(o.refs, "controllerPublish", want.ControllerPublishSecretRef, f.ControllerPublish)
	o.refs = appendRefOverride(o.refs, "nodeExpand", want.NodeExpandSecretRef, f.NodeExpand)
	o.refs = appendRefOverride(o.refs, "nodePublish", want.NodePublishSecretRef, f.NodePublish)
	o.refs = appendRefOverride(o.refs, "nodeStage", want.NodeStageSecretRef, f.NodeStage)
	if !equalModes(csiPV.Spec.AccessModes, f.AccessModes) {
		o.accessModes = true
		o.modes = csiPV.Spec.AccessModes
	}
	if o.empty() {
		return nil
	}
	var buf [512]byte
	SetAnnotation(inTree, AnnCSIOverrides, string(appendOverrides(buf[:0], &o)))
	return nil
}

// overrides is what FinishReverseFrom records, in the order the annotation
// is written: the attributes sorted by key, the secret references by slot
// name. It is the csiOverrides a reader decodes, without maps, so that
// writing it takes no allocation but the annotation's.
type overrides struct {
	volumeHandle *string
	readOnly     *bool
	fsType       *string
	attrs        []attrOverride
	refs         []refOverride
	// accessModes is set when modes are recorded ([] for none).
	accessModes bool
	modes       []v1.PersistentVolumeAccessMode
}

// attrOverride is one volume attribute to set, or to remove.
type attrOverride struct {
	key, value string
	remove     bool
}

// refOverride is one secret reference to set, or to remove.
type refOverride struct {
	slot   string
	ref    v1.SecretReference
	remove bool
}

// appendRefOverride appends to dst the override of slot when want, the CSI
// source's reference, differs from have, the one a forward translation sets.
func appendRefOverride(dst []refOverride, slot string, want, have *v1.SecretReference) []refOverride {
	if want == have || (want != nil && have != nil && *want == *have) {
		return dst
	}
	return append(dst, refOverrideOf(slot, want))
}

// refOverrideOf records ref (nil: remove) for slot.
func refOverrideOf(slot string, ref *v1.SecretReference) refOverride {
	if ref == nil {
		return refOverride{slot: slot, remove: true}
	}
	return refOverride{slot: slot, ref: *ref}
}

// sortAttrs sorts a by key: by insertion when there are a few, as usual.
func sortAttrs(a []attrOverride) {
	if len(a) > 12 {
		slices.SortFunc(a, func(x, y attrOverride) int { return strings.Compare(x.key, y.key) })
		return
	}
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].key < a[j-1].key; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

func (o *overrides) empty() bool {
	return o.volumeHandle == nil && o.readOnly == nil && o.fsType == nil && len(o.attrs) == 0 &&
		len(o.refs) == 0 && !o.accessModes
}

// ApplyOverrides applies and removes [AnnCSIOverrides] on out, a PV that a
// forward translation produced (with spec.csi set). An unreadable annotation
// is an error that names it.
//
// The form a reverse translation writes is read directly; any other JSON the
// annotation may hold after a person edited it (whitespace, escapes, other
// member order) is read with encoding/json, with the same meaning.
func ApplyOverrides(out *v1.PersistentVolume) error {
	raw, ok := TakeAnnotation(out, AnnCSIOverrides)
	if !ok {
		return nil
	}
	if out.Spec.CSI == nil {
		return Invalid("PersistentVolume", out.Name, field.Required(field.NewPath("spec", "csi"),
			"the annotation "+AnnCSIOverrides+" applies to a CSI volume source"))
	}
	return applyAnnotation(out, raw, nil, false)
}

// KeepStockHandle enforces the handle contract of plugins whose in-tree
// plugin csi-translation-lib also translates: after [ApplyOverrides] or
// [FinishForward], when out's handle is not stock, the handle
// csi-translation-lib computes for the same in-tree PV, out gets stock and
// its handle moves to [AnnOriginalVolumeHandle]. Components running either
// library then compute the same VolumeAttachment and kubelet volume names
// for one stored PV; the handle a reverse translation recorded stays where
// the next reverse translation finds it.
func KeepStockHandle(out *v1.PersistentVolume, stock string) {
	c := out.Spec.CSI
	if c == nil || c.VolumeHandle == stock {
		return
	}
	SetAnnotation(out, AnnOriginalVolumeHandle, c.VolumeHandle)
	c.VolumeHandle = stock
}

// FinishForward completes a forward translation: it sets the volume
// attributes of out's CSI source to attrs (each key once) and applies and
// removes [AnnCSIOverrides] as [ApplyOverrides] does, building the attribute
// map once, with the recorded attributes merged in.
func FinishForward(out *v1.PersistentVolume, attrs []Attribute) error {
	if out.Spec.CSI == nil {
		return Invalid("PersistentVolume", out.Name, field.Required(field.NewPath("spec", "csi"),
			"a forward translation sets a CSI volume source"))
	}
	raw, ok := TakeAnnotation(out, AnnCSIOverrides)
	if !ok {
		out.Spec.CSI.VolumeAttributes = AttributeMap(attrs)
		return nil
	}
	return applyAnnotation(out, raw, attrs, true)
}

// applyAnnotation decodes the overrides annotation raw and applies it to out,
// whose attributes are base when withBase (else its attribute map).
func applyAnnotation(out *v1.PersistentVolume, raw string, base []Attribute, withBase bool) error {
	var buf overridesBuf
	if o, ok := decodeOverrides(raw, &buf); ok {
		return applyOverrides(out, &o, base, withBase)
	}
	var o csiOverrides
	if err := json.Unmarshal([]byte(raw), &o); err != nil {
		return Invalid("PersistentVolume", out.Name, field.Invalid(
			field.NewPath("metadata", "annotations").Key(AnnCSIOverrides), raw,
			"must be the JSON object a reverse translation by csimigrate writes: "+err.Error()))
	}
	return applyOverrides(out, o.sorted(), base, withBase)
}

// sorted returns o as overrides, its attributes and references sorted.
func (o *csiOverrides) sorted() *overrides {
	w := &overrides{volumeHandle: o.VolumeHandle, readOnly: o.ReadOnly, fsType: o.FSType}
	for _, k := range slices.Sorted(maps.Keys(o.VolumeAttributes)) {
		if v := o.VolumeAttributes[k]; v == nil {
			w.attrs = append(w.attrs, attrOverride{key: k, remove: true})
		} else {
			w.attrs = append(w.attrs, attrOverride{key: k, value: *v})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(o.SecretRefs)) {
		w.refs = append(w.refs, refOverrideOf(k, o.SecretRefs[k]))
	}
	if o.AccessModes != nil {
		w.accessModes, w.modes = true, *o.AccessModes
	}
	return w
}

// applyOverrides applies o to out's CSI source and access modes. The
// attributes it starts from are base when withBase, else the source's map.
// Attributes and references apply in order (a later one for the same key
// wins).
func applyOverrides(out *v1.PersistentVolume, o *overrides, base []Attribute, withBase bool) error {
	// Every slot is checked before anything changes.
	for _, r := range o.refs {
		if refSlot(out.Spec.CSI, r.slot) == nil {
			return Invalid("PersistentVolume", out.Name, field.NotSupported(
				field.NewPath("metadata", "annotations").Key(AnnCSIOverrides).Child("secretRefs"), r.slot,
				[]string{"controllerExpand", "controllerPublish", "nodeExpand", "nodePublish", "nodeStage"}))
		}
	}
	c := out.Spec.CSI
	if o.volumeHandle != nil {
		c.VolumeHandle = *o.volumeHandle
	}
	if o.readOnly != nil {
		c.ReadOnly = *o.readOnly
	}
	if o.fsType != nil {
		c.FSType = *o.fsType
	}
	switch {
	case len(o.attrs) > 0:
		// One new map sized for the result: adding to a full one would grow
		// (and rehash) it.
		n := len(c.VolumeAttributes)
		if withBase {
			n = len(base)
		}
		for _, a := range o.attrs {
			if a.remove {
				continue
			}
			found := false
			if withBase {
				found = slices.IndexFunc(base, func(b Attribute) bool { return b.Key == a.key }) >= 0
			} else {
				_, found = c.VolumeAttributes[a.key]
			}
			if !found {
				n++
			}
		}
		attrs := make(map[string]string, n)
		if withBase {
			for _, b := range base {
				attrs[b.Key] = b.Value
			}
		} else {
			for k, v := range c.VolumeAttributes {
				attrs[k] = v
			}
		}
		for _, a := range o.attrs {
			if a.remove {
				delete(attrs, a.key)
			} else {
				attrs[a.key] = a.value
			}
		}
		if len(attrs) == 0 {
			attrs = nil
		}
		c.VolumeAttributes = attrs
	case withBase:
		c.VolumeAttributes = AttributeMap(base)
	}
	for _, r := range o.refs {
		slot := refSlot(c, r.slot)
		*slot = nil
		if !r.remove {
			ref := r.ref
			*slot = &ref
		}
	}
	if o.accessModes {
		out.Spec.AccessModes = nil
		if len(o.modes) > 0 {
			out.Spec.AccessModes = slices.Clone(o.modes)
		}
	}
	return nil
}

// refSlot returns the field of c that holds the secret reference named slot
// in the overrides annotation, or nil.
func refSlot(c *v1.CSIPersistentVolumeSource, slot string) **v1.SecretReference {
	switch slot {
	case "controllerExpand":
		return &c.ControllerExpandSecretRef
	case "controllerPublish":
		return &c.ControllerPublishSecretRef
	case "nodeExpand":
		return &c.NodeExpandSecretRef
	case "nodePublish":
		return &c.NodePublishSecretRef
	case "nodeStage":
		return &c.NodeStageSecretRef
	}
	return nil
}

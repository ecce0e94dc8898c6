// Package overrides keeps the built-in plugins' translations lossless: a
// reverse translation records in plugin.AnnCSIOverrides what a forward
// translation of its result would not reproduce ([Record]), and a forward
// translation applies and removes it ([Recorded], read from its input before
// it copies; or [Forward] and [Apply] on the copy).
package overrides

import (
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/csimigrate/csimigrate/internal/annot"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/secrets"
)

// csiOverrides is the JSON form of the annotation, as encoding/json reads it.
type csiOverrides struct {
	VolumeHandle     *string                          `json:"volumeHandle,omitempty"`
	ReadOnly         *bool                            `json:"readOnly,omitempty"`
	FSType           *string                          `json:"fsType,omitempty"`
	VolumeAttributes map[string]*string               `json:"volumeAttributes,omitempty"`
	SecretRefs       map[string]*v1.SecretReference   `json:"secretRefs,omitempty"`
	AccessModes      *[]v1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`
}

// Attribute is one volume attribute.
type Attribute struct {
	Key, Value string
}

// Forwarded describes what a plugin's forward translation of an in-tree PV
// sets in the CSI source and the access modes, without building them, for
// [Record]. The pointers and slices are only read.
type Forwarded struct {
	VolumeHandle string
	ReadOnly     bool
	FSType       string
	// Attributes are the volume attributes, each key once.
	Attributes []Attribute
	// refs are the secret references, by the index of their kind in
	// secrets.Kinds (nil when unset): see WithRef and Ref.
	refs [numKinds]*v1.SecretReference
	// AccessModes are the PV's access modes after translation.
	AccessModes []v1.PersistentVolumeAccessMode
}

// numKinds is len(secrets.Kinds), checked by kindIndex's test.
const numKinds = 7

// kindIndex is the index of k in secrets.Kinds, -1 for an unknown kind.
func kindIndex(k secrets.Kind) int { return slices.Index(secrets.Kinds, k) }

// WithRef returns f with the reference of a kind a CSI PV source carries
// set. (A value, not a setter: a reference stored through a pointer would
// move what it points to, often the caller's stack, to the heap.)
func (f Forwarded) WithRef(k secrets.Kind, ref *v1.SecretReference) Forwarded {
	if i := kindIndex(k); i >= 0 {
		f.refs[i] = ref
	}
	return f
}

// Ref returns the reference of a kind (nil when unset).
func (f *Forwarded) Ref(k secrets.Kind) *v1.SecretReference {
	if i := kindIndex(k); i >= 0 {
		return f.refs[i]
	}
	return nil
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

// Record completes a reverse translation. inTree is the in-tree PV a plugin
// restored from csiPV (owned by the caller, modified here); f is what the
// plugin's forward translation of inTree (without plugin.AnnCSIOverrides,
// which is removed here) would set. Record writes into that annotation
// whatever differs from csiPV's CSI source and access modes, so that forward
// translation of the result gives csiPV's CSI source back exactly. When
// nothing differs, as for every PV a forward translation produced, it only
// removes the annotation.
//
// A CSI PV that carries plugin.AnnOriginalVolumeHandle and the handle the
// forward translation computes has that annotation's handle recorded
// instead; one that carries plugin.AnnOriginalProvisionedBy gets its
// original pv.kubernetes.io/provisioned-by back.
func Record(inTree, csiPV *v1.PersistentVolume, f *Forwarded) error {
	annot.Take(inTree, plugin.AnnCSIOverrides)
	want := csiPV.Spec.CSI
	var o overrides
	if by, ok := annot.Take(inTree, plugin.AnnOriginalProvisionedBy); ok {
		annot.Set(inTree, plugin.AnnProvisionedBy, by)
	}
	original, hasOriginal := annot.Take(inTree, plugin.AnnOriginalVolumeHandle)
	switch {
	case want.VolumeHandle != f.VolumeHandle:
		o.volumeHandle, o.hasVolumeHandle = want.VolumeHandle, true
	case hasOriginal && original != f.VolumeHandle:
		o.volumeHandle, o.hasVolumeHandle = original, true
	}
	if want.ReadOnly != f.ReadOnly {
		o.readOnly, o.hasReadOnly = want.ReadOnly, true
	}
	if want.FSType != f.FSType {
		o.fsType, o.hasFSType = want.FSType, true
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
	for _, slot := range sourceSlots {
		o.refs = appendRefOverride(o.refs, slot.name, *slot.field(want), f.refs[slot.index])
	}
	if !annot.EqualModes(csiPV.Spec.AccessModes, f.AccessModes) {
		o.accessModes = true
		o.modes = csiPV.Spec.AccessModes
	}
	if o.empty() {
		return nil
	}
	var buf [512]byte
	annot.Set(inTree, plugin.AnnCSIOverrides, string(appendOverrides(buf[:0], &o)))
	return nil
}

// overrides is what Record records, in the order the annotation
// is written: the attributes sorted by key, the secret references by slot
// name. It is the csiOverrides a reader decodes, without maps, so that
// writing it takes no allocation but the annotation's.
type overrides struct {
	scalars
	attrs []attrOverride
	refs  []refOverride
}

// scalars are the overrides other than attributes and references.
type scalars struct {
	// Each is recorded where its has* is set.
	volumeHandle                            string
	readOnly                                bool
	fsType                                  string
	hasVolumeHandle, hasReadOnly, hasFSType bool
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

// sortAttrs sorts a by key.
func sortAttrs(a []attrOverride) {
	slices.SortFunc(a, func(x, y attrOverride) int { return strings.Compare(x.key, y.key) })
}

func (o *overrides) empty() bool {
	return !o.hasVolumeHandle && !o.hasReadOnly && !o.hasFSType && len(o.attrs) == 0 &&
		len(o.refs) == 0 && !o.accessModes
}

// Apply applies and removes plugin.AnnCSIOverrides on out, a PV that a
// forward translation produced (with spec.csi set). An unreadable annotation
// is an error that names it.
func Apply(out *v1.PersistentVolume) error {
	raw, ok := annot.Take(out, plugin.AnnCSIOverrides)
	if !ok {
		return nil
	}
	if out.Spec.CSI == nil {
		return plugin.Invalid("PersistentVolume", out.Name, field.Required(field.NewPath("spec", "csi"),
			"the annotation "+plugin.AnnCSIOverrides+" applies to a CSI volume source"))
	}
	var r Recorded
	if err := r.read(out.Name, raw); err != nil {
		return err
	}
	return apply(out, &r.sc, r.attrList(), r.refList(), nil, false)
}

// KeepStockHandle enforces the handle contract of plugins whose in-tree
// plugin csi-translation-lib also translates: after [Apply] or [Forward],
// when out's handle is not stock, the handle
// csi-translation-lib computes for the same in-tree PV, out gets stock and
// its handle moves to plugin.AnnOriginalVolumeHandle. Components running either
// library then compute the same VolumeAttachment and kubelet volume names
// for one stored PV; the handle a reverse translation recorded stays where
// the next reverse translation finds it.
func KeepStockHandle(out *v1.PersistentVolume, stock string) {
	c := out.Spec.CSI
	if c == nil || c.VolumeHandle == stock {
		return
	}
	annot.Set(out, plugin.AnnOriginalVolumeHandle, c.VolumeHandle)
	c.VolumeHandle = stock
}

// Forward completes a forward translation: it sets the volume attributes of
// out's CSI source to attrs (each key once) and applies and removes
// plugin.AnnCSIOverrides as [Apply] does, building the attribute map once,
// with the recorded attributes merged in.
func Forward(out *v1.PersistentVolume, attrs []Attribute) error {
	if out.Spec.CSI == nil {
		return errNoCSI(out)
	}
	var r Recorded
	if raw, ok := annot.Take(out, plugin.AnnCSIOverrides); ok {
		if err := r.read(out.Name, raw); err != nil {
			return err
		}
	}
	return r.Forward(out, attrs)
}

// errNoCSI is the error of a forward translation that set no CSI source.
func errNoCSI(out *v1.PersistentVolume) error {
	return plugin.Invalid("PersistentVolume", out.Name, field.Required(field.NewPath("spec", "csi"),
		"a forward translation sets a CSI volume source"))
}

// Recorded is the overrides annotation of an in-tree PV, as [Recorded.Read]
// decodes it; its zero value is no annotation. It holds the attributes and
// references a reverse translation records for the built-in plugins, so
// that a Recorded declared on a caller's stack reads the annotation without
// allocating (more go to the heap).
type Recorded struct {
	present bool
	sc      scalars
	// The attributes are attrs[:nAttrs], or moreAttrs when there are more;
	// likewise the references. (Counts, not slices of the arrays: a
	// Recorded pointing into itself would move to the heap.)
	attrs     [16]attrOverride
	nAttrs    int
	moreAttrs []attrOverride
	refs      [5]refOverride
	nRefs     int
	moreRefs  []refOverride
}

// Read decodes the overrides annotation of in, the input of a forward
// translation, into r. An unreadable annotation is an error that names it.
func (r *Recorded) Read(in *v1.PersistentVolume) error {
	// What was read before is forgotten. (Only then: a Recorded that holds
	// no annotation is zero but for its arrays, which are read only up to
	// the counts; clearing a new one is time a forward translation shows.)
	if r.present {
		*r = Recorded{}
	}
	raw, ok := in.Annotations[plugin.AnnCSIOverrides]
	if !ok {
		return nil
	}
	return r.read(in.Name, raw)
}

// read decodes raw, the annotation of the PV named name, into r, which
// holds no annotation.
func (r *Recorded) read(name, raw string) error {
	attrs, refs, err := decode(raw, &r.sc, r.attrs[:0], r.refs[:0])
	if err != nil {
		r.sc = scalars{}
		return plugin.Invalid("PersistentVolume", name, field.Invalid(
			field.NewPath("metadata", "annotations").Key(plugin.AnnCSIOverrides), raw,
			"must be the JSON object a reverse translation by csimigrate writes: "+err.Error()))
	}
	r.present = true
	// Up to their capacity, append filled the arrays.
	if len(attrs) <= len(r.attrs) {
		r.nAttrs = len(attrs)
	} else {
		r.moreAttrs = make([]attrOverride, len(attrs))
		copy(r.moreAttrs, attrs)
	}
	if len(refs) <= len(r.refs) {
		r.nRefs = len(refs)
	} else {
		r.moreRefs = make([]refOverride, len(refs))
		copy(r.moreRefs, refs)
	}
	return nil
}

// attrList returns the recorded attributes, sorted by key.
func (r *Recorded) attrList() []attrOverride {
	if r.moreAttrs != nil {
		return r.moreAttrs
	}
	return r.attrs[:r.nAttrs]
}

// refList returns the recorded references, sorted by slot.
func (r *Recorded) refList() []refOverride {
	if r.moreRefs != nil {
		return r.moreRefs
	}
	return r.refs[:r.nRefs]
}

// RemoveFrom removes the annotation from out, the copy of the PV r was read
// from (a map lookup only when there is one to remove).
func (r *Recorded) RemoveFrom(out *v1.PersistentVolume) {
	if r.present {
		annot.Take(out, plugin.AnnCSIOverrides)
	}
}

// Present reports whether the PV had the annotation.
func (r *Recorded) Present() bool { return r.present }

// Attribute returns the value the annotation sets for the volume attribute
// key; false when it sets none (or removes it).
func (r *Recorded) Attribute(key string) (string, bool) {
	attrs := r.attrList()
	i, found := slices.BinarySearchFunc(attrs, key, func(a attrOverride, k string) int { return strings.Compare(a.key, k) })
	if !found || attrs[i].remove {
		return "", false
	}
	return attrs[i].value, true
}

// Forward completes the forward translation of the PV r was read from: out
// is its copy, with the CSI source set and without plugin.AnnCSIOverrides
// (which the caller removes from the copy before it adds annotations, so
// that the map has room for them). It sets the volume attributes to attrs
// (each key once) with the recorded ones merged in (one map) and applies
// the rest of the annotation.
func (r *Recorded) Forward(out *v1.PersistentVolume, attrs []Attribute) error {
	if out.Spec.CSI == nil {
		return errNoCSI(out)
	}
	if !r.present {
		out.Spec.CSI.VolumeAttributes = AttributeMap(attrs)
		return nil
	}
	return apply(out, &r.sc, r.attrList(), r.refList(), attrs, true)
}

// apply applies the overrides (each attribute key and slot once, sorted) to
// out's CSI source and access modes. The attributes it starts from are base
// when withBase, else the source's map. A reference to a slot the CSI source
// does not have is an error that names the first such slot in the order of
// their names, before anything changes.
func apply(out *v1.PersistentVolume, sc *scalars, attrs []attrOverride, refs []refOverride, base []Attribute, withBase bool) error {
	c := out.Spec.CSI
	for _, r := range refs {
		if refSlot(c, r.slot) == nil {
			return plugin.Invalid("PersistentVolume", out.Name, field.NotSupported(
				field.NewPath("metadata", "annotations").Key(plugin.AnnCSIOverrides).Child("secretRefs"), r.slot,
				slotNames))
		}
	}
	if sc.hasVolumeHandle {
		c.VolumeHandle = sc.volumeHandle
	}
	if sc.hasReadOnly {
		c.ReadOnly = sc.readOnly
	}
	if sc.hasFSType {
		c.FSType = sc.fsType
	}
	switch {
	case len(attrs) > 0:
		c.VolumeAttributes = applyAttrs(attrs, c.VolumeAttributes, base, withBase)
	case withBase:
		c.VolumeAttributes = AttributeMap(base)
	}
	for _, r := range refs {
		var ref *v1.SecretReference
		if !r.remove {
			ref = &v1.SecretReference{Name: r.ref.Name, Namespace: r.ref.Namespace}
		}
		*refSlot(c, r.slot) = ref
	}
	if sc.accessModes {
		out.Spec.AccessModes = nil
		if len(sc.modes) > 0 {
			out.Spec.AccessModes = sc.modes
		}
	}
	return nil
}

// applyAttrs returns the attributes, base when withBase (else have), with
// those of o set and removed: one new map sized for the result (adding to a
// full one would grow, and rehash, it); nil when none is left.
func applyAttrs(o []attrOverride, have map[string]string, base []Attribute, withBase bool) map[string]string {
	n := len(have)
	if withBase {
		n = len(base)
	}
	for _, a := range o {
		if a.remove {
			continue
		}
		found := false
		if withBase {
			found = slices.IndexFunc(base, func(b Attribute) bool { return b.Key == a.key }) >= 0
		} else {
			_, found = have[a.key]
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
		maps.Copy(attrs, have)
	}
	for _, a := range o {
		if a.remove {
			delete(attrs, a.key)
		} else {
			attrs[a.key] = a.value
		}
	}
	if len(attrs) == 0 {
		return nil
	}
	return attrs
}

// sourceSlot is a secret reference a CSI PV source carries: its member name
// in the annotation, the field of the source, its index in Forwarded.
type sourceSlot struct {
	name  string
	field func(*v1.CSIPersistentVolumeSource) **v1.SecretReference
	index int
}

// sourceSlots are the references a CSI PV source carries (secrets' table),
// named as the annotation names them, the kind in camel case ("node-stage"
// is "nodeStage"), sorted by name as encoding/json writes map keys.
var sourceSlots = func() []sourceSlot {
	var out []sourceSlot
	for i, k := range secrets.Kinds {
		field := k.SourceField()
		if field == nil {
			continue
		}
		parts := strings.Split(string(k), "-")
		for i := 1; i < len(parts); i++ {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
		out = append(out, sourceSlot{name: strings.Join(parts, ""), field: field, index: i})
	}
	slices.SortFunc(out, func(x, y sourceSlot) int { return strings.Compare(x.name, y.name) })
	return out
}()

// slotNames are the names of sourceSlots, for errors.
var slotNames = func() []string {
	out := make([]string, len(sourceSlots))
	for i, s := range sourceSlots {
		out[i] = s.name
	}
	return out
}()

// refSlot returns the field of c that holds the secret reference named slot
// in the overrides annotation, or nil.
func refSlot(c *v1.CSIPersistentVolumeSource, slot string) **v1.SecretReference {
	for _, s := range sourceSlots {
		if s.name == slot {
			return s.field(c)
		}
	}
	return nil
}

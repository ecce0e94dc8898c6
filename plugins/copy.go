package plugins

import (
	"encoding/json"
	"maps"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnAccessModes is set by a forward translation that had to change a PV's
// access modes (for example RBD, where Ceph CSI accepts only ReadWriteOnce or
// ReadOnlyMany for a migrated file-system volume). Its value is the original
// list in the encoding of [EncodeList]; the reverse translation restores it.
const AnnAccessModes = "csimigrate.io/access-modes"

// PVBuffer is a PersistentVolume with room for the small parts a copy of a PV
// points to: the claim reference, the volume mode, up to two finalizers and up
// to two access modes. [CopyPVInto] fills it with one allocation less per
// part; a plugin embeds it in the block it allocates for a translation, so
// that the PV and everything it owns of fixed size is one allocation.
type PVBuffer struct {
	// PV is the copy.
	PV         v1.PersistentVolume
	claim      v1.ObjectReference
	volumeMode v1.PersistentVolumeMode
	finalizers [2]string
	modes      [2]v1.PersistentVolumeAccessMode
}

// AccessMode returns the list of the single access mode m, stored in buf
// (a translation that overrides the access modes of the copy uses it after
// CopyPVInto).
func (buf *PVBuffer) AccessMode(m v1.PersistentVolumeAccessMode) []v1.PersistentVolumeAccessMode {
	buf.modes[0] = m
	return buf.modes[:1:1]
}

// CopyPV returns a deep copy of pv without its volume source (the caller sets
// the translated one) and with room for extraAnnotations more annotations.
// The copy shares no memory with pv. pv must not be nil.
func CopyPV(pv *v1.PersistentVolume, extraAnnotations int) *v1.PersistentVolume {
	return CopyPVInto(new(PVBuffer), pv, extraAnnotations)
}

// CopyPVInto is CopyPV into buf, which the caller allocated (for example as
// part of a larger block); it returns &buf.PV. The parts of fixed size go into
// buf, the managed fields into two allocations plus their field sets, and
// everything else through the generated DeepCopyInto, so that a field added
// to the API later is copied too.
func CopyPVInto(buf *PVBuffer, pv *v1.PersistentVolume, extraAnnotations int) *v1.PersistentVolume {
	return copyPVInto(buf, pv, extraAnnotations, false, nil)
}

func copyPVInto(buf *PVBuffer, pv *v1.PersistentVolume, extraAnnotations int, replaceMounts bool, mountOptions []string) *v1.PersistentVolume {
	shallow := *pv
	if replaceMounts {
		shallow.Spec.MountOptions = nil
	}
	shallow.Annotations = nil
	shallow.ManagedFields = nil
	shallow.Finalizers = nil
	shallow.Spec.PersistentVolumeSource = v1.PersistentVolumeSource{}
	shallow.Spec.ClaimRef = nil
	shallow.Spec.VolumeMode = nil
	shallow.Spec.AccessModes = nil
	shallow.Labels = nil
	out := &buf.PV
	shallow.DeepCopyInto(out)
	out.Labels = maps.Clone(pv.Labels)
	if replaceMounts {
		out.Spec.MountOptions = mountOptions
	}
	out.Annotations = CopyStringMap(pv.Annotations, extraAnnotations)
	out.ManagedFields = copyManagedFields(pv.ManagedFields)
	if f := pv.Finalizers; f != nil {
		if len(f) <= len(buf.finalizers) {
			n := copy(buf.finalizers[:], f)
			out.Finalizers = buf.finalizers[:n:n]
		} else {
			out.Finalizers = append([]string(nil), f...)
		}
	}
	if m := pv.Spec.AccessModes; m != nil {
		if len(m) <= len(buf.modes) {
			n := copy(buf.modes[:], m)
			out.Spec.AccessModes = buf.modes[:n:n]
		} else {
			out.Spec.AccessModes = append([]v1.PersistentVolumeAccessMode(nil), m...)
		}
	}
	if pv.Spec.ClaimRef != nil {
		buf.claim = *pv.Spec.ClaimRef
		out.Spec.ClaimRef = &buf.claim
	}
	if pv.Spec.VolumeMode != nil {
		buf.volumeMode = *pv.Spec.VolumeMode
		out.Spec.VolumeMode = &buf.volumeMode
	}
	return out
}

// CopyPVIntoReplacing is CopyPVInto for a translation that replaces the
// mount options: the copy gets mountOptions (owned by the caller) and pv's
// are not copied.
func CopyPVIntoReplacing(buf *PVBuffer, pv *v1.PersistentVolume, extraAnnotations int, mountOptions []string) *v1.PersistentVolume {
	return copyPVInto(buf, pv, extraAnnotations, true, mountOptions)
}

// managedFieldsParts holds what one managed-fields entry points to.
type managedFieldsParts struct {
	time   metav1.Time
	fields metav1.FieldsV1
}

// managedFields2 holds up to two managed-fields entries and what they point
// to: a stored PV has one or two (the controller's spec and status updates).
type managedFields2 struct {
	entries [2]metav1.ManagedFieldsEntry
	parts   [2]managedFieldsParts
}

// copyManagedFields deep-copies managed fields: up to two entries with what
// they point to in one allocation, more in two; the field sets' bytes in one
// more (none where FieldsV1 is string-backed).
func copyManagedFields(in []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	if in == nil {
		return nil
	}
	pointers := false
	for i := range in {
		if in[i].Time != nil || in[i].FieldsV1 != nil {
			pointers = true
			break
		}
	}
	var out []metav1.ManagedFieldsEntry
	var parts []managedFieldsParts
	switch {
	case len(in) <= 2 && pointers:
		blk := new(managedFields2)
		out, parts = blk.entries[:len(in):len(in)], blk.parts[:len(in):len(in)]
	case pointers:
		out, parts = make([]metav1.ManagedFieldsEntry, len(in)), make([]managedFieldsParts, len(in))
	default:
		out = make([]metav1.ManagedFieldsEntry, len(in))
	}
	copy(out, in)
	if parts == nil {
		return out
	}
	copyFieldSets(in, parts)
	for i := range parts {
		if t := in[i].Time; t != nil {
			parts[i].time = *t
			out[i].Time = &parts[i].time
		}
		if in[i].FieldsV1 != nil {
			out[i].FieldsV1 = &parts[i].fields
		}
	}
	return out
}

// smallMap is how many entries a Go map holds in its first group: up to it,
// a clone has room for more entries without growing.
const smallMap = 8

// CopyStringMap copies m into a new map with room for extra more entries. It
// returns nil when m is empty (SetAnnotation creates a map when needed), so
// that a nil map stays nil.
func CopyStringMap(m map[string]string, extra int) map[string]string {
	if len(m) == 0 {
		return nil
	}
	if len(m)+extra <= smallMap {
		return maps.Clone(m)
	}
	out := make(map[string]string, len(m)+extra)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// SetAnnotation sets an annotation on pv, creating the map when needed.
func SetAnnotation(pv *v1.PersistentVolume, key, value string) {
	if pv.Annotations == nil {
		pv.Annotations = make(map[string]string, 4)
	}
	pv.Annotations[key] = value
}

// TakeAnnotation returns and removes an annotation; an annotation map left
// empty becomes nil.
func TakeAnnotation(pv *v1.PersistentVolume, key string) (string, bool) {
	v, ok := pv.Annotations[key]
	if ok {
		delete(pv.Annotations, key)
		if len(pv.Annotations) == 0 {
			pv.Annotations = nil
		}
	}
	return v, ok
}

// CopySecretRef returns a copy of ref, or nil.
func CopySecretRef(ref *v1.SecretReference) *v1.SecretReference {
	if ref == nil {
		return nil
	}
	c := *ref
	return &c
}

// SetAccessModes replaces out's access modes by want and, when they differ
// from original, records original in [AnnAccessModes].
func SetAccessModes(out *v1.PersistentVolume, original, want []v1.PersistentVolumeAccessMode) {
	out.Spec.AccessModes = want
	if !equalModes(original, want) {
		modes := make([]string, len(original))
		for i, m := range original {
			modes[i] = string(m)
		}
		SetAnnotation(out, AnnAccessModes, EncodeList(modes))
	}
}

// RestoreAccessModes undoes SetAccessModes on a PV being translated back.
func RestoreAccessModes(pv *v1.PersistentVolume) error {
	v, ok := TakeAnnotation(pv, AnnAccessModes)
	if !ok {
		return nil
	}
	list, err := DecodeList(v)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		pv.Spec.AccessModes = nil
		return nil
	}
	modes := make([]v1.PersistentVolumeAccessMode, len(list))
	for i, m := range list {
		modes[i] = v1.PersistentVolumeAccessMode(m)
	}
	pv.Spec.AccessModes = modes
	return nil
}

func equalModes(a, b []v1.PersistentVolumeAccessMode) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// EncodeList encodes a list of strings for an annotation value: joined with
// "," when that is unambiguous (no element is empty or contains ",", and the
// first does not start with "["), otherwise as a JSON array. The empty list is
// "". [DecodeList] reverses it exactly for valid UTF-8 strings, which is all
// an object read from the API server can hold (its JSON wire format replaces
// invalid bytes, and so does the JSON form here).
func EncodeList(list []string) string {
	if PlainList(list) {
		return strings.Join(list, ",")
	}
	n := 2
	for _, s := range list {
		n += len(s) + 3
	}
	return string(appendJSONList(make([]byte, 0, n), list))
}

// AppendEncodedList appends EncodeList(list) to dst.
func AppendEncodedList(dst []byte, list []string) []byte {
	if !PlainList(list) {
		return appendJSONList(dst, list)
	}
	for i, s := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, s...)
	}
	return dst
}

// PlainList reports whether EncodeList writes list comma-joined.
func PlainList(list []string) bool {
	for _, s := range list {
		if s == "" || strings.IndexByte(s, ',') >= 0 {
			return false
		}
	}
	return len(list) == 0 || !strings.HasPrefix(list[0], "[")
}

// DecodeList reverses [EncodeList]. It returns nil for "".
func DecodeList(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	if strings.HasPrefix(s, "[") {
		var list []string
		if err := json.Unmarshal([]byte(s), &list); err != nil {
			return nil, err
		}
		return list, nil
	}
	return strings.Split(s, ","), nil
}

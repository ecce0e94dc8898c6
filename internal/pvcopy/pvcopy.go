// Package pvcopy copies a PersistentVolume for a translation: everything but
// the volume source, in few allocations, sharing no memory with the input.
package pvcopy

import (
	"maps"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Buffer is a PersistentVolume with room for the small parts a copy of a PV
// points to: the claim reference, the volume mode, the time of the last phase
// transition, up to two managed-fields entries (without their field sets),
// up to two finalizers and up to two access modes. [Into] fills it with one allocation less per part; a
// plugin embeds it in the block it allocates for a translation, so that the PV
// and everything it owns of fixed size is one allocation.
type Buffer struct {
	// PV is the copy.
	PV         v1.PersistentVolume
	claim      v1.ObjectReference
	volumeMode v1.PersistentVolumeMode
	phaseTime  metav1.Time
	managed    managedFields2
	finalizers [2]string
	modes      [2]v1.PersistentVolumeAccessMode
}

// AccessMode returns the list of the single access mode m, stored in buf
// (a translation that overrides the access modes of the copy uses it after
// Into).
func (buf *Buffer) AccessMode(m v1.PersistentVolumeAccessMode) []v1.PersistentVolumeAccessMode {
	buf.modes[0] = m
	return buf.modes[:1:1]
}

// Into copies pv, without its volume source (the caller sets the translated
// one) and with room for extraAnnotations more annotations (negative when
// the caller removes some before it adds any), into buf, which
// the caller allocated (for example as part of a larger block); it returns
// &buf.PV. The copy shares no memory with pv, which must not be nil. The
// parts of fixed size go into buf (managed-fields entries beyond two into
// one more allocation), each field set into its own, and everything else
// through the generated DeepCopyInto, so that a field added to the API later
// is copied too.
func Into(buf *Buffer, pv *v1.PersistentVolume, extraAnnotations int) *v1.PersistentVolume {
	return into(buf, pv, extraAnnotations, false, nil)
}

func into(buf *Buffer, pv *v1.PersistentVolume, extraAnnotations int, replaceMounts bool, mountOptions []string) *v1.PersistentVolume {
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
	shallow.Status.LastPhaseTransitionTime = nil
	shallow.Labels = nil
	// Built on the stack and copied to buf once: while the collector
	// marks, each store of a pointer into the heap costs a write barrier,
	// and the generated DeepCopyInto stores every field more than once.
	var pvOut v1.PersistentVolume
	out := &pvOut
	shallow.DeepCopyInto(out)
	out.Labels = maps.Clone(pv.Labels)
	if replaceMounts {
		out.Spec.MountOptions = mountOptions
	}
	out.Annotations = cloneMap(pv.Annotations, extraAnnotations)
	out.ManagedFields = copyManagedFields(pv.ManagedFields, &buf.managed)
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
	if t := pv.Status.LastPhaseTransitionTime; t != nil {
		buf.phaseTime = *t
		out.Status.LastPhaseTransitionTime = &buf.phaseTime
	}
	buf.PV = pvOut
	return &buf.PV
}

// IntoReplacingMounts is Into for a translation that replaces the mount
// options: the copy gets mountOptions (owned by the caller) and pv's are not
// copied.
func IntoReplacingMounts(buf *Buffer, pv *v1.PersistentVolume, extraAnnotations int, mountOptions []string) *v1.PersistentVolume {
	return into(buf, pv, extraAnnotations, true, mountOptions)
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
// they point to into blk, more in two allocations; the field sets as
// copyFieldSets copies them.
func copyManagedFields(in []metav1.ManagedFieldsEntry, blk *managedFields2) []metav1.ManagedFieldsEntry {
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
	for i := range parts {
		if t := in[i].Time; t != nil {
			parts[i].time = *t
			out[i].Time = &parts[i].time
		}
		if in[i].FieldsV1 != nil {
			out[i].FieldsV1 = &parts[i].fields
		}
	}
	copyFieldSets(in, parts)
	return out
}

// smallMap is how many entries a Go map holds in its first group: up to it,
// a clone has room for more entries without growing.
const smallMap = 8

// cloneMap copies m into a new map with room for extra more entries (a
// negative extra: the caller removes that many before it adds any). It
// returns nil when m is empty (annot.Set creates a map when needed), so that
// a nil map stays nil.
func cloneMap(m map[string]string, extra int) map[string]string {
	if len(m) == 0 {
		return nil
	}
	// A clone copies the map's memory without hashing each key again: a
	// small map when the result stays small, and a table, which has room
	// for an eighth more entries at least (adding to a full one grows it:
	// no dearer than the inserts below). A small map that would outgrow its
	// group is rebuilt as a table of the final size.
	if len(m)+extra <= smallMap || len(m) > smallMap {
		return maps.Clone(m)
	}
	out := make(map[string]string, len(m)+max(extra, 0))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ClearServerFields clears what the API server sets on a PV (metadata it owns, the
// status, the claimRef's resourceVersion), so that it can be created. It
// modifies and returns pv.
func ClearServerFields(pv *v1.PersistentVolume) *v1.PersistentVolume {
	if pv == nil {
		return nil
	}
	pv.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"}
	pv.ResourceVersion, pv.UID, pv.Generation = "", "", 0
	//lint:ignore SA1019 clearing the deprecated field is the point
	pv.SelfLink = ""
	pv.CreationTimestamp = metav1.Time{}
	pv.DeletionTimestamp, pv.DeletionGracePeriodSeconds = nil, nil
	pv.ManagedFields = nil
	pv.Status = v1.PersistentVolumeStatus{}
	if pv.Spec.ClaimRef != nil {
		pv.Spec.ClaimRef.ResourceVersion = ""
	}
	return pv
}

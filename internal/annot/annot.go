// Package annot holds what the built-in plugins write into and read from a
// PV's annotations: setting and taking one, the list encoding of carried
// lists (monitors, access modes), and the access modes a translation changes.
package annot

import (
	"encoding/json"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/plugin"
)

// Set sets an annotation on pv, creating the map when needed.
func Set(pv *v1.PersistentVolume, key, value string) {
	if pv.Annotations == nil {
		pv.Annotations = make(map[string]string, 4)
	}
	pv.Annotations[key] = value
}

// Take returns and removes an annotation; an annotation map left empty
// becomes nil.
func Take(pv *v1.PersistentVolume, key string) (string, bool) {
	v, ok := pv.Annotations[key]
	if ok {
		delete(pv.Annotations, key)
		if len(pv.Annotations) == 0 {
			pv.Annotations = nil
		}
	}
	return v, ok
}

// EncodeList encodes a list of strings for an annotation value: joined with
// "," when that is unambiguous (no element is empty or contains ",", and the
// first does not start with "["), otherwise as a JSON array. The empty list is
// "". [DecodeList] reverses it exactly for valid UTF-8 strings, which is all
// an object read from the API server can hold (its JSON wire format replaces
// invalid bytes, and so does the JSON form here).
func EncodeList(list []string) string {
	if plain(list) {
		return strings.Join(list, ",")
	}
	b, _ := json.Marshal(list) // a []string always marshals
	return string(b)
}

// plain reports whether EncodeList writes list comma-joined.
func plain(list []string) bool {
	for _, s := range list {
		if s == "" || strings.IndexByte(s, ',') >= 0 {
			return false
		}
	}
	return len(list) == 0 || !strings.HasPrefix(list[0], "[")
}

// SplitsTo reports whether strings.Split(s, ",") gives list: s is list
// joined with "," and no element is empty or contains ",".
func SplitsTo(s string, list []string) bool {
	if len(list) == 0 {
		return false
	}
	for i, e := range list {
		if e == "" || strings.IndexByte(e, ',') >= 0 {
			return false
		}
		if i > 0 {
			if s == "" || s[0] != ',' {
				return false
			}
			s = s[1:]
		}
		if !strings.HasPrefix(s, e) {
			return false
		}
		s = s[len(e):]
	}
	return s == ""
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

// SetAccessModes replaces out's access modes by want and, when they differ
// from original, records original in [plugin.AnnAccessModes].
func SetAccessModes(out *v1.PersistentVolume, original, want []v1.PersistentVolumeAccessMode) {
	out.Spec.AccessModes = want
	if !EqualModes(original, want) {
		modes := make([]string, len(original))
		for i, m := range original {
			modes[i] = string(m)
		}
		Set(out, plugin.AnnAccessModes, EncodeList(modes))
	}
}

// RestoreAccessModes undoes SetAccessModes on a PV being translated back.
func RestoreAccessModes(pv *v1.PersistentVolume) error {
	v, ok := Take(pv, plugin.AnnAccessModes)
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

// EqualModes reports whether a and b are the same list, nil and empty apart.
func EqualModes(a, b []v1.PersistentVolumeAccessMode) bool {
	return (a == nil) == (b == nil) && slices.Equal(a, b)
}

// Package scparams reads the parameters of an in-tree StorageClass as the
// in-tree provisioners did: keys matched case-insensitively against a fixed
// list, unknown keys refused, and keys equal but for case refused.
package scparams

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Param is a parameter given for a known key.
type Param struct {
	// Key is the key as spelled in the StorageClass; "" when the known key
	// was not given.
	Key string
	// Value is its value.
	Value string
}

// Set reports whether the parameter was given.
func (p Param) Set() bool { return p.Key != "" }

// Match matches the keys of params, case-insensitively, against known (lower
// case, non-empty) and fills got, which has one slot per known key, with the
// parameter given for each. It returns an error for each unknown key
// (NotSupported, listing known) and for each key equal but for case to another
// (Duplicate, against the first of them in sorted order, which is the one kept
// in got), sorted by [Sort]; fp gives the path of the parameters and is called
// only for an error.
func Match(got []Param, params map[string]string, known []string, fp func() *field.Path) field.ErrorList {
	clear(got)
	var errs field.ErrorList
	var dups []int
	for k, v := range params {
		i := index(known, k)
		switch {
		case i < 0:
			errs = append(errs, field.NotSupported(fp().Key(k), k, known))
		case !got[i].Set():
			got[i] = Param{Key: k, Value: v}
		default:
			if k < got[i].Key {
				errs = append(errs, field.Duplicate(fp().Key(got[i].Key), ""))
				got[i] = Param{Key: k, Value: v}
			} else {
				errs = append(errs, field.Duplicate(fp().Key(k), ""))
			}
			dups = append(dups, i)
		}
	}
	// The value names the key kept, known only now.
	d := 0
	for _, e := range errs {
		if e.Type == field.ErrorTypeDuplicate {
			e.BadValue = "same key as " + got[dups[d]].Key + " (keys are case-insensitive)"
			d++
		}
	}
	Sort(errs)
	return errs
}

func index(known []string, k string) int {
	for i, kn := range known {
		if len(k) == len(kn) && strings.EqualFold(k, kn) {
			return i
		}
	}
	return -1
}

// Sort orders errors by field, type and detail, so that an error message
// does not depend on map iteration order.
func Sort(errs field.ErrorList) {
	slices.SortFunc(errs, func(a, b *field.Error) int {
		if c := strings.Compare(a.Field, b.Field); c != 0 {
			return c
		}
		if c := strings.Compare(string(a.Type), string(b.Type)); c != 0 {
			return c
		}
		return strings.Compare(a.Detail, b.Detail)
	})
}

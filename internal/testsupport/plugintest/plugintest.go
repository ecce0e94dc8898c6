// Package plugintest checks the contract of plugin.InTreePlugin with rapid:
// forward then reverse translation is the identity on valid in-tree PVs,
// reverse then forward is the identity on what forward produces, inputs are
// never modified, outputs share no memory with inputs, and nothing panics
// on hostile input.
package plugintest

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/plugin"
)

// RoundTrip checks both round trips and the absence of mutation and sharing
// on PVs from valid.
func RoundTrip(t *testing.T, p plugin.InTreePlugin, valid func(*rapid.T) *v1.PersistentVolume) {
	t.Helper()
	logger := klog.Background().V(100)
	rapid.Check(t, func(t *rapid.T) {
		pv := valid(t)
		orig := pv.DeepCopy()
		csi, err := p.TranslateInTreePVToCSI(logger, pv)
		if err != nil {
			t.Fatalf("forward: %v", err)
		}
		if diff := cmp.Diff(orig, pv); diff != "" {
			t.Fatalf("forward modified its input (-before +after):\n%s", diff)
		}
		if csi.Spec.CSI == nil || csi.Spec.CSI.Driver != p.GetCSIPluginName() {
			t.Fatalf("forward produced no CSI source for %s", p.GetCSIPluginName())
		}
		if !CSIOnly(csi) {
			t.Fatalf("forward left an in-tree source: %+v", csi.Spec.PersistentVolumeSource)
		}
		if path := Shared(pv, csi); path != "" {
			t.Fatalf("forward output shares memory with its input at %s", path)
		}
		csiOrig := csi.DeepCopy()
		back, err := p.TranslateCSIPVToInTree(csi)
		if err != nil {
			t.Fatalf("reverse: %v", err)
		}
		if diff := cmp.Diff(csiOrig, csi); diff != "" {
			t.Fatalf("reverse modified its input (-before +after):\n%s", diff)
		}
		if path := Shared(csi, back); path != "" {
			t.Fatalf("reverse output shares memory with its input at %s", path)
		}
		if diff := cmp.Diff(orig, back); diff != "" {
			t.Fatalf("forward then reverse is not the identity (-original +round trip):\n%s", diff)
		}
		again, err := p.TranslateInTreePVToCSI(logger, back)
		if err != nil {
			t.Fatalf("forward of reverse: %v", err)
		}
		if diff := cmp.Diff(csi, again); diff != "" {
			t.Fatalf("reverse then forward is not the identity (-csi +round trip):\n%s", diff)
		}
	})
}

// CSIOnly reports whether pv's only volume source is CSI.
func CSIOnly(pv *v1.PersistentVolume) bool {
	s := pv.Spec.PersistentVolumeSource
	s.CSI = nil
	return reflect.ValueOf(s).IsZero()
}

// Hostile checks that no method panics or modifies its input on hostile PVs,
// and that every error is one of the documented kinds.
func Hostile(t *testing.T, p plugin.InTreePlugin) {
	t.Helper()
	logger := klog.Background().V(100)
	rapid.Check(t, func(t *rapid.T) {
		pv := gen.HostilePV(t)
		orig := pv.DeepCopy()
		check := func(what string, err error) {
			if err != nil && !errors.Is(err, plugin.ErrInvalid) && !errors.Is(err, plugin.ErrMissingInformation) && !errors.Is(err, plugin.ErrUnsupported) {
				t.Fatalf("%s: error of no documented kind: %v", what, err)
			}
		}
		if p.CanSupport(pv) {
			out, err := p.TranslateInTreePVToCSI(logger, pv)
			check("forward", err)
			if err == nil {
				if path := Shared(pv, out); path != "" {
					t.Fatalf("forward output shares memory at %s", path)
				}
			}
		} else {
			_, err := p.TranslateInTreePVToCSI(logger, pv)
			if !errors.Is(err, plugin.ErrInvalid) {
				t.Fatalf("forward of a PV the plugin cannot support: %v", err)
			}
		}
		_, err := p.TranslateCSIPVToInTree(pv)
		check("reverse", err)
		if c, ok := p.(plugin.Checker); ok {
			c.CheckPV(pv)
		}
		vol := &v1.Volume{Name: pv.Name}
		vol.RBD = rbdInline(pv.Spec.RBD)
		vol.CephFS = cephfsInline(pv.Spec.CephFS)
		vol.VsphereVolume = pv.Spec.VsphereVolume
		volOrig := vol.DeepCopy()
		_, err = p.TranslateInTreeInlineVolumeToCSI(logger, vol, rapid.SampledFrom([]string{"", "ns"}).Draw(t, "podNS"))
		check("inline", err)
		if diff := cmp.Diff(orig, pv); diff != "" {
			t.Fatalf("input modified (-before +after):\n%s", diff)
		}
		if diff := cmp.Diff(volOrig, vol); diff != "" {
			t.Fatalf("inline input modified (-before +after):\n%s", diff)
		}
		// Nil inputs.
		_, err = p.TranslateInTreePVToCSI(logger, nil)
		check("forward nil", err)
		_, err = p.TranslateCSIPVToInTree(nil)
		check("reverse nil", err)
		_, err = p.TranslateInTreeInlineVolumeToCSI(logger, nil, "")
		check("inline nil", err)
		_, err = p.TranslateInTreeStorageClassToCSI(logger, nil)
		check("storage class nil", err)
	})
}

func rbdInline(s *v1.RBDPersistentVolumeSource) *v1.RBDVolumeSource {
	if s == nil {
		return nil
	}
	out := &v1.RBDVolumeSource{CephMonitors: s.CephMonitors, RBDImage: s.RBDImage, FSType: s.FSType, RBDPool: s.RBDPool,
		RadosUser: s.RadosUser, Keyring: s.Keyring, ReadOnly: s.ReadOnly}
	if s.SecretRef != nil {
		out.SecretRef = &v1.LocalObjectReference{Name: s.SecretRef.Name}
	}
	return out
}

func cephfsInline(s *v1.CephFSPersistentVolumeSource) *v1.CephFSVolumeSource {
	if s == nil {
		return nil
	}
	out := &v1.CephFSVolumeSource{Monitors: s.Monitors, Path: s.Path, User: s.User, SecretFile: s.SecretFile, ReadOnly: s.ReadOnly}
	if s.SecretRef != nil {
		out.SecretRef = &v1.LocalObjectReference{Name: s.SecretRef.Name}
	}
	return out
}

// Shared returns the path of a pointer, slice or map that a and b share, or
// "" when they share none. Time zones (*time.Location) and interned values
// (unique.Handle, which string-backed FieldsV1 holds) are not counted.
func Shared(a, b any) string {
	seen := map[uintptr]string{}
	collect(reflect.ValueOf(a), "in", seen)
	return find(reflect.ValueOf(b), "out", seen)
}

func addr(v reflect.Value) (uintptr, bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Map:
		if v.IsNil() {
			return 0, false
		}
		return v.Pointer(), true
	case reflect.Slice:
		if v.IsNil() || v.Cap() == 0 {
			return 0, false
		}
		return uintptr(v.UnsafePointer()), true
	}
	return 0, false
}

// locationType is skipped by walk: a *time.Location is immutable and shared
// by every copy of a time (DeepCopy shares it too).
var locationType = reflect.TypeFor[*time.Location]()

// quantityType is skipped by walk where the release's Quantity.DeepCopy
// shares a quantity's memory (sharedQuantity).
var quantityType = reflect.TypeFor[resource.Quantity]()

// sharedQuantity is whether Quantity.DeepCopy shares the copied quantity's
// decimal: 1.38 made a Quantity immutable, and its DeepCopy returns it as
// it is; until 1.37 it copies the decimal. Asked of a quantity too large
// for an int64, which a decimal holds.
var sharedQuantity = func() bool {
	q, err := resource.ParseQuantity("123456789012345678901234567890")
	if err != nil {
		return false
	}
	c := q.DeepCopy()
	dec := func(q resource.Quantity) reflect.Value { return reflect.ValueOf(q).FieldByName("d").FieldByName("Dec") }
	a, b := dec(q), dec(c)
	return a.IsValid() && a.Kind() == reflect.Pointer && !a.IsNil() && a.Pointer() == b.Pointer()
}()

// immutable reports whether values of t are immutable and shared by every
// copy (DeepCopy shares them too): time zones, unique.Handle values, and
// quantities where the release's DeepCopy shares them (sharedQuantity).
func immutable(t reflect.Type) bool {
	return t == locationType || t.PkgPath() == "unique" && strings.HasPrefix(t.Name(), "Handle[") ||
		t == quantityType && sharedQuantity
}

func walk(v reflect.Value, path string, visit func(reflect.Value, string) bool) bool {
	if immutable(v.Type()) {
		return false
	}
	if p, ok := addr(v); ok && p != 0 {
		if visit(v, path) {
			return true
		}
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return walk(v.Elem(), path, visit)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if walk(v.Field(i), path+"."+v.Type().Field(i).Name, visit) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if walk(v.Index(i), path+"[]", visit) {
				return true
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if walk(it.Value(), path+"{}", visit) {
				return true
			}
		}
	}
	return false
}

func collect(v reflect.Value, path string, seen map[uintptr]string) {
	walk(v, path, func(v reflect.Value, p string) bool {
		a, _ := addr(v)
		seen[a] = p
		return false
	})
}

func find(v reflect.Value, path string, seen map[uintptr]string) string {
	var hit string
	walk(v, path, func(v reflect.Value, p string) bool {
		a, _ := addr(v)
		if in, ok := seen[a]; ok {
			hit = p + " (= " + in + ")"
			return true
		}
		return false
	})
	return hit
}

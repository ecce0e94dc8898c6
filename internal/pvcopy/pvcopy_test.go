package pvcopy_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/internal/pvcopy"
	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/internal/testsupport/plugintest"
)

// managedFields generates entries with and without times and field sets,
// including empty and non-empty field sets.
func managedFields(t *rapid.T) []metav1.ManagedFieldsEntry {
	if rapid.Bool().Draw(t, "nilManagedFields") {
		return nil
	}
	n := rapid.IntRange(0, 4).Draw(t, "nManagedFields")
	out := make([]metav1.ManagedFieldsEntry, n)
	for i := range out {
		out[i].Manager = rapid.SampledFrom([]string{"kube-controller-manager", "csimigrate"}).Draw(t, "manager")
		if rapid.Bool().Draw(t, "hasTime") {
			ts := metav1.NewTime(time.Unix(rapid.Int64Range(0, 1<<32).Draw(t, "time"), 0))
			out[i].Time = &ts
		}
		switch rapid.IntRange(0, 3).Draw(t, "fields") {
		case 1:
			out[i].FieldsV1 = &metav1.FieldsV1{}
		case 2:
			out[i].FieldsV1 = plugintest.FieldSet("")
		case 3:
			out[i].FieldsV1 = plugintest.FieldSet(rapid.StringMatching(`\{"f:[a-z]{1,8}":\{\}\}`).Draw(t, "raw"))
		}
	}
	return out
}

// Into is DeepCopy without the volume source, for PVs of every shape the
// copy handles specially (finalizers, access modes, claim, volume mode and
// managed fields of every size), and shares no memory with its input.
func TestInto(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pv := gen.RBDPV(t)
		pv.ManagedFields = managedFields(t)
		pv.Finalizers = rapid.SliceOfN(rapid.SampledFrom([]string{"kubernetes.io/pv-protection", "example.com/hold"}), 0, 4).Draw(t, "finalizers")
		if rapid.Bool().Draw(t, "nilModes") {
			pv.Spec.AccessModes = nil
		} else if rapid.Bool().Draw(t, "threeModes") {
			pv.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce, v1.ReadOnlyMany, v1.ReadWriteMany}
		}
		if rapid.Bool().Draw(t, "decimalCapacity") {
			// A quantity held as an inf.Dec, which a copy must not share.
			q := resource.MustParse(rapid.SampledFrom([]string{"1.5Gi", "10Gi", "0.1"}).Draw(t, "capacity"))
			pv.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: *q.ToDec()}
		}
		if rapid.Bool().Draw(t, "labels") {
			pv.Labels = rapid.MapOfN(rapid.StringMatching(`[a-z]{1,6}`), rapid.String(), 0, 12).Draw(t, "labelMap")
		}
		if rapid.Bool().Draw(t, "bound") {
			ts := metav1.NewTime(time.Unix(rapid.Int64Range(0, 1<<32).Draw(t, "phaseTime"), 0))
			pv.Status = v1.PersistentVolumeStatus{Phase: v1.VolumeBound, LastPhaseTransitionTime: &ts}
		}
		orig := pv.DeepCopy()
		// A negative number: the caller removes annotations before it adds.
		got := pvcopy.Into(new(pvcopy.Buffer), pv, rapid.IntRange(-1, 8).Draw(t, "extra"))
		want := pv.DeepCopy()
		want.Spec.PersistentVolumeSource = v1.PersistentVolumeSource{}
		if len(want.Annotations) == 0 {
			want.Annotations = nil
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("copy differs from DeepCopy (-want +got):\n%s", diff)
		}
		if path := plugintest.Shared(pv, got); path != "" {
			t.Fatalf("copy shares memory with its input at %s", path)
		}
		if diff := cmp.Diff(orig, pv); diff != "" {
			t.Fatalf("input modified:\n%s", diff)
		}
	})
}

// IntoReplacingMounts is Into with the mount options replaced, and does
// not copy (or share) the input's.
func TestIntoReplacingMounts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pv := gen.RBDPV(t)
		pv.ManagedFields = managedFields(t)
		pv.Spec.MountOptions = rapid.SliceOfN(rapid.String(), 0, 3).Draw(t, "mountOptions")
		mounts := rapid.SliceOfN(rapid.String(), 0, 3).Draw(t, "replacement")
		if rapid.Bool().Draw(t, "nilReplacement") {
			mounts = nil
		}
		orig := pv.DeepCopy()
		got := pvcopy.IntoReplacingMounts(new(pvcopy.Buffer), pv, 1, mounts)
		want := pvcopy.Into(new(pvcopy.Buffer), pv, 1)
		want.Spec.MountOptions = mounts
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
		got.Spec.MountOptions = nil
		if path := plugintest.Shared(pv, got); path != "" {
			t.Fatalf("copy shares memory with its input at %s", path)
		}
		if diff := cmp.Diff(orig, pv); diff != "" {
			t.Fatalf("input modified:\n%s", diff)
		}
	})
}

// BenchmarkCopyPV compares Into with DeepCopy on a stored PV.
func BenchmarkCopyPV(b *testing.B) {
	pv := plugintest.Stored(&v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", Annotations: map[string]string{"a": "b"}},
		Spec: v1.PersistentVolumeSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, ClaimRef: &v1.ObjectReference{Name: "c", Namespace: "n"}}})
	var sink *v1.PersistentVolume
	b.Run("DeepCopyFloor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = pv.DeepCopy()
		}
	})
	b.Run("Into", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = pvcopy.Into(new(pvcopy.Buffer), pv, 0)
		}
	})
	_ = sink
}

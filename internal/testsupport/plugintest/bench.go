package plugintest

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/plugin"
)

// Stored returns a copy of pv as the API server returns it once the volume
// is bound: uid, resourceVersion and creation time, the pv-protection
// finalizer, the bound-by-controller annotation, volumeMode defaulted to
// Filesystem, status Bound with its transition time, and the managed fields
// of the PV controller (spec and status). Benchmarks measure translation on
// this shape, which is what sidecars and controllers read from informers.
func Stored(pv *v1.PersistentVolume) *v1.PersistentVolume {
	out := pv.DeepCopy()
	ts := metav1.NewTime(time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC))
	out.UID = "6f1c2a4e-0d1b-4b53-9a61-2b0c1d9a7e11"
	out.ResourceVersion = "83412"
	out.CreationTimestamp = ts
	out.Finalizers = append(out.Finalizers, "kubernetes.io/pv-protection")
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations["pv.kubernetes.io/bound-by-controller"] = "yes"
	if out.Spec.VolumeMode == nil {
		fs := v1.PersistentVolumeFilesystem
		out.Spec.VolumeMode = &fs
	}
	if c := out.Spec.ClaimRef; c != nil {
		c.Kind, c.APIVersion = "PersistentVolumeClaim", "v1"
		c.UID = "0f4f8e0e-1c4b-4f7a-9a3e-5d1c2b3a4f50"
		c.ResourceVersion = "83398"
	}
	out.Status = v1.PersistentVolumeStatus{Phase: v1.VolumeBound, LastPhaseTransitionTime: &ts}
	out.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &ts, FieldsType: "FieldsV1",
			FieldsV1: FieldSet(`{"f:metadata":{"f:annotations":{".":{},"f:pv.kubernetes.io/bound-by-controller":{}},"f:finalizers":{".":{},"v:\"kubernetes.io/pv-protection\"":{}}},"f:spec":{"f:accessModes":{},"f:capacity":{".":{},"f:storage":{}},"f:claimRef":{".":{},"f:apiVersion":{},"f:kind":{},"f:name":{},"f:namespace":{},"f:resourceVersion":{},"f:uid":{}},"f:persistentVolumeReclaimPolicy":{},"f:volumeMode":{}}}`)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &ts, FieldsType: "FieldsV1", Subresource: "status",
			FieldsV1: FieldSet(`{"f:status":{"f:lastPhaseTransitionTime":{},"f:phase":{}}}`)},
	}
	return out
}

// BenchInput is what Benchmarks measures a plugin on.
type BenchInput struct {
	// PV is a minimal in-tree PV of the plugin; Stored(PV) is measured too.
	PV *v1.PersistentVolume
	// Inline is an inline volume of the plugin and PodNamespace its pod's.
	Inline       *v1.Volume
	PodNamespace string
	// StorageClass is an in-tree StorageClass, or nil when the plugin
	// translates none.
	StorageClass *storagev1.StorageClass
}

// Sink keeps benchmark results alive: a copy whose result is discarded can be
// allocated on the stack, which no translation (it returns its result) can
// do, and the floor would be too low.
var Sink struct {
	PV     *v1.PersistentVolume
	Volume *v1.Volume
	SC     *storagev1.StorageClass
}

// Benchmarks measures every translation entry point of p next to the
// DeepCopy of its input (the floor: a translation may not modify its input,
// so it copies). Sub-benchmarks, each group with its floor:
//
//	PV/{minimal,stored}/forward/{DeepCopyFloor,TranslateInTreePVToCSI}
//	PV/{minimal,stored}/reverse/{DeepCopyFloor,TranslateCSIPVToInTree}
//	Inline/{DeepCopyFloor,TranslateInTreeInlineVolumeToCSI}
//	StorageClass/{DeepCopyFloor,TranslateInTreeStorageClassToCSI}
//
// The reverse input is the forward translation's output.
func Benchmarks(b *testing.B, p plugin.InTreePlugin, in BenchInput) {
	logger := klog.Background().V(100)
	for _, shape := range []struct {
		name string
		pv   *v1.PersistentVolume
	}{{"minimal", in.PV}, {"stored", Stored(in.PV)}} {
		benchPV(b, p, logger, shape.name, shape.pv)
	}
	if vol := in.Inline; vol != nil {
		b.Run("Inline/DeepCopyFloor", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Sink.Volume = vol.DeepCopy()
			}
		})
		b.Run("Inline/TranslateInTreeInlineVolumeToCSI", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := p.TranslateInTreeInlineVolumeToCSI(logger, vol, in.PodNamespace)
				if err != nil {
					b.Fatal(err)
				}
				Sink.PV = out
			}
		})
	}
	if sc := in.StorageClass; sc != nil {
		b.Run("StorageClass/DeepCopyFloor", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Sink.SC = sc.DeepCopy()
			}
		})
		b.Run("StorageClass/TranslateInTreeStorageClassToCSI", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := p.TranslateInTreeStorageClassToCSI(logger, sc)
				if err != nil {
					b.Fatal(err)
				}
				Sink.SC = out
			}
		})
	}
}

// benchPV benchmarks p's translations of pv both ways, each beside the
// DeepCopy of its input (the floor), under PV/name.
func benchPV(b *testing.B, p plugin.InTreePlugin, logger klog.Logger, name string, pv *v1.PersistentVolume) {
	b.Run("PV/"+name+"/forward/DeepCopyFloor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Sink.PV = pv.DeepCopy()
		}
	})
	b.Run("PV/"+name+"/forward/TranslateInTreePVToCSI", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, err := p.TranslateInTreePVToCSI(logger, pv)
			if err != nil {
				b.Fatal(err)
			}
			Sink.PV = out
		}
	})
	csi, err := p.TranslateInTreePVToCSI(logger, pv)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("PV/"+name+"/reverse/DeepCopyFloor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Sink.PV = csi.DeepCopy()
		}
	})
	b.Run("PV/"+name+"/reverse/TranslateCSIPVToInTree", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, err := p.TranslateCSIPVToInTree(csi)
			if err != nil {
				b.Fatal(err)
			}
			Sink.PV = out
		}
	})
}

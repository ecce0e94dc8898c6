package rbd_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/internal/plugintest"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/volumeid"
)

// storedPV is refPV as the API server returns it: uid, resourceVersion,
// creation time, the finalizer and annotations the controllers set, and the
// managed fields of the provisioner and the PV controller.
func storedPV() *v1.PersistentVolume {
	pv := refPV()
	pv.UID = "6f1c2a4e-0d1b-4b53-9a61-2b0c1d9a7e11"
	pv.ResourceVersion = "83412"
	pv.CreationTimestamp = metav1.NewTime(time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC))
	pv.Finalizers = []string{"kubernetes.io/pv-protection"}
	pv.Annotations["pv.kubernetes.io/bound-by-controller"] = "yes"
	pv.Spec.StorageClassName = "ceph-rbd"
	pv.Spec.ClaimRef.UID = "0f4f8e0e-1c4b-4f7a-9a3e-5d1c2b3a4f50"
	pv.Spec.ClaimRef.ResourceVersion = "83398"
	pv.Status.Phase = v1.VolumeBound
	ts := metav1.NewTime(pv.CreationTimestamp.Time)
	pv.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &ts, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{".":{},"f:pv.kubernetes.io/provisioned-by":{}}},"f:spec":{"f:accessModes":{},"f:capacity":{".":{},"f:storage":{}},"f:persistentVolumeReclaimPolicy":{},"f:rbd":{".":{},"f:fsType":{},"f:image":{},"f:keyring":{},"f:monitors":{},"f:pool":{},"f:secretRef":{},"f:user":{}},"f:storageClassName":{},"f:volumeMode":{}}}`)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &ts, FieldsType: "FieldsV1", Subresource: "status",
			FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:phase":{}}}`)},
	}
	return pv
}

var benchPVs = []struct {
	name string
	pv   func() *v1.PersistentVolume
}{{"stored", storedPV}, {"minimal", refPV}}

// BenchmarkPV runs the floor (DeepCopy: a translation may not modify its
// input, so it copies) and both translations on a PV as the API server
// stores it and on a minimal one.
func BenchmarkPV(b *testing.B) {
	for _, bp := range benchPVs {
		b.Run(bp.name, func(b *testing.B) {
			plugintest.Benchmarks(b, rbd.New(rbd.Options{}), bp.pv())
		})
	}
}

func BenchmarkParseRBDHandle(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := volumeid.ParseRBDHandle(refHandle); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRBDHandleString(b *testing.B) {
	h, _ := volumeid.ParseRBDHandle(refHandle)
	b.ReportAllocs()
	for b.Loop() {
		_ = h.String()
	}
}

package controller

import (
	"fmt"
	"runtime"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/csimigrate/csimigrate/plugin"
)

// BenchmarkPVStubHeld reports the live heap an informer's store holds for
// each PV kept as a stub (bytes/stub-held): Ceph CSI PVs as
// external-provisioner makes them, each decoded from its protobuf form as
// a list's page gives it (each string its own allocation), 20,000 of them
// (the BenchmarkControllerScale of cmd/csimigrate measures the controller
// whole).
func BenchmarkPVStubHeld(b *testing.B) {
	const n = 20000
	pvs := make([][]byte, n)
	for i := range pvs {
		name := fmt.Sprintf("pvc-%08d-6f1c-4b53-9a61-2b0c1d9a7e11", i)
		pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(fmt.Sprintf("%08d-1111-4b53-9a61-2b0c1d9a7e11", i)), ResourceVersion: fmt.Sprint(1000000 + i),
			Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": plugin.RBDDriverName}, Finalizers: []string{"kubernetes.io/pv-protection"}},
			Spec: v1.PersistentVolumeSpec{Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("8Gi")}, StorageClassName: "ceph-rbd",
				ClaimRef: &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: fmt.Sprintf("team-%d", i%40), Name: fmt.Sprintf("data-%d", i),
					UID: types.UID(fmt.Sprintf("%08d-2222-4b53-9a61-2b0c1d9a7e11", i))},
				PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: plugin.RBDDriverName,
					VolumeHandle:     fmt.Sprintf("0001-0024-b7f67366-bb43-f32e-07d8-a261a7840da9-0000000000000002-%08d-6f1c-4b53-9a61-2b0c1d9a7e11", i),
					VolumeAttributes: map[string]string{"clusterID": "b7f67366bb43f32e07d8a261a7840da9", "pool": "kube", "imageName": fmt.Sprintf("csi-vol-%08d-6f1c-4b53-9a61-2b0c1d9a7e11", i)}}}},
			Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound}}
		data, err := pv.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		pvs[i] = data
	}
	var held float64
	for b.Loop() {
		before := liveHeap()
		s := cache.NewStore(cache.MetaNamespaceKeyFunc)
		for _, data := range pvs {
			pv := &v1.PersistentVolume{}
			if err := pv.Unmarshal(data); err != nil {
				b.Fatal(err)
			}
			obj, err := trimPV(pv)
			if err != nil {
				b.Fatal(err)
			}
			if _, ok := obj.(*pvStub); !ok {
				b.Fatalf("kept as %T, not a stub", obj)
			}
			if err := s.Add(obj); err != nil {
				b.Fatal(err)
			}
		}
		held = float64(liveHeap()-before) / n
		runtime.KeepAlive(s)
	}
	b.ReportMetric(held, "bytes/stub-held")
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

package cephfs_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/csimigrate/csimigrate/internal/plugintest"
	"github.com/csimigrate/csimigrate/plugins/cephfs"
	"github.com/csimigrate/csimigrate/volumeid"
)

// benchPV is pv() with what a stored PV carries besides.
func benchPV() *v1.PersistentVolume {
	p := pv()
	p.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("100Gi")}
	p.Finalizers = []string{"kubernetes.io/pv-protection"}
	p.Annotations = map[string]string{"pv.kubernetes.io/bound-by-controller": "yes"}
	p.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
	p.Spec.ClaimRef.UID = "7a1c9b2e-5d3f-4e6a-8b7c-9d0e1f2a3b4c"
	return p
}

func BenchmarkPV(b *testing.B) {
	plugintest.Benchmarks(b, cephfs.New(cephfs.Options{}), benchPV())
}

func BenchmarkParseCephFSHandle(b *testing.B) {
	s := volumeid.NewCephFSHandle([]string{"10.70.53.126:6789"}, "myfs", "/volumes/shared").String()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := volumeid.ParseCephFSHandle(s); err != nil {
			b.Fatal(err)
		}
	}
}

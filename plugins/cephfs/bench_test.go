package cephfs_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/csimigrate/csimigrate/internal/testsupport/plugintest"
	"github.com/csimigrate/csimigrate/plugins/cephfs"
	"github.com/csimigrate/csimigrate/volumeid"
)

// benchPV is pv() with a capacity and reclaim policy.
func benchPV() *v1.PersistentVolume {
	p := pv()
	p.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("100Gi")}
	p.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
	return p
}

// BenchmarkPlugin has no StorageClass: in-tree CephFS had no provisioner.
func BenchmarkPlugin(b *testing.B) {
	plugintest.Benchmarks(b, cephfs.New(cephfs.Options{}), plugintest.BenchInput{
		PV: benchPV(),
		Inline: &v1.Volume{Name: "shared", VolumeSource: v1.VolumeSource{CephFS: &v1.CephFSVolumeSource{
			Monitors: []string{"10.70.53.126:6789"}, Path: "/volumes/shared", User: "kube", SecretRef: &v1.LocalObjectReference{Name: "ceph-secret"}}}},
		PodNamespace: "app",
	})
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

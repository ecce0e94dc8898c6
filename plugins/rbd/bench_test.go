package rbd_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/internal/testsupport/plugintest"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/volumeid"
)

// benchSC is a StorageClass of the in-tree RBD provisioner as its
// documentation shows it.
func benchSC() *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "rbd"}, Provisioner: rbd.PluginName, Parameters: map[string]string{
		"monitors": "10.70.53.126:6789,10.70.53.127:6789", "adminId": "admin", "adminSecretName": "ceph-admin", "adminSecretNamespace": "kube-system",
		"pool": "kube", "userId": "kube", "userSecretName": "ceph-user", "userSecretNamespace": "default", "imageFormat": "2", "imageFeatures": "layering"}}
}

func BenchmarkPlugin(b *testing.B) {
	plugintest.Benchmarks(b, rbd.New(rbd.Options{}), plugintest.BenchInput{
		PV: refPV(),
		Inline: &v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{RBD: &v1.RBDVolumeSource{
			CephMonitors: []string{refMons}, RBDImage: refImage, RBDPool: "replicapool", RadosUser: "kube", FSType: "ext4",
			SecretRef: &v1.LocalObjectReference{Name: "ceph-secret"}}}},
		PodNamespace: "app",
		StorageClass: benchSC(),
	})
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

package vsphere_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/internal/testsupport/plugintest"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
)

func benchPV() *v1.PersistentVolume {
	pv := pvWith(affinity(in(v1.LabelTopologyZone, "zone-a"), in(v1.LabelTopologyRegion, "region-1")),
		map[string]string{v1.LabelTopologyZone: "zone-a", v1.LabelTopologyRegion: "region-1"})
	pv.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("20Gi")}
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "crm", Name: "pg-data", UID: "3c2b1a09-8f7e-4d6c-a5b4-c3d2e1f0a9b8"}
	pv.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": "kubernetes.io/vsphere-volume"}
	return pv
}

func BenchmarkPlugin(b *testing.B) {
	plugintest.Benchmarks(b, vsphere.New(vsphere.Options{}), plugintest.BenchInput{
		PV: benchPV(),
		Inline: &v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{
			VolumePath: "[vsanDatastore] kubevols/data.vmdk", FSType: "ext4", StoragePolicyName: "gold"}}},
		StorageClass: &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "vs"}, Provisioner: vsphere.PluginName, Parameters: map[string]string{
			"storagepolicyname": "gold", "datastore": "vsanDatastore", "diskformat": "thin", "fstype": "ext4"}},
	})
}

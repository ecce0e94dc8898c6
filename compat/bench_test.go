package compat

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	upstream "k8s.io/csi-translation-lib/plugins"

	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
)

// storedMeta is the metadata of a PV as the API server returns it.
func storedMeta(name string) metav1.ObjectMeta {
	ts := metav1.NewTime(time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC))
	return metav1.ObjectMeta{
		Name: name, UID: "6f1c2a4e-0d1b-4b53-9a61-2b0c1d9a7e11", ResourceVersion: "83412", CreationTimestamp: ts,
		Finalizers:  []string{"kubernetes.io/pv-protection"},
		Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "in-tree", "pv.kubernetes.io/bound-by-controller": "yes"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: "v1", Time: &ts, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{}},"f:spec":{"f:accessModes":{},"f:capacity":{}}}`)}},
	}
}

func storedSpec() v1.PersistentVolumeSpec {
	return v1.PersistentVolumeSpec{
		Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("10Gi")},
		AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		ClaimRef:                      &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "shop", Name: "db", UID: "0f4f8e0e-1c4b-4f7a-9a3e-5d1c2b3a4f50"},
		PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
		StorageClassName:              "standard",
	}
}

func rbdPV() *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: storedMeta("pvc-rbd"), Spec: storedSpec()}
	pv.Spec.RBD = &v1.RBDPersistentVolumeSource{CephMonitors: []string{"10.70.53.126:6789", "10.70.53.127:6789"},
		RBDImage: "kubernetes-dynamic-pvc-e4111eb6-4088-11ec-b823-0242ac110003", RBDPool: "replicapool", RadosUser: "kube", FSType: "ext4",
		SecretRef: &v1.SecretReference{Name: "ceph-secret", Namespace: "kube-system"}}
	return pv
}

func vspherePV() *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: storedMeta("pvc-vs"), Spec: storedSpec()}
	pv.Labels = map[string]string{v1.LabelTopologyZone: "zone-a", v1.LabelTopologyRegion: "region-1"}
	pv.Spec.VsphereVolume = &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[vsanDatastore] kubevols/pvc-1.vmdk", FSType: "ext4", StoragePolicyName: "gold"}
	pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
		{Key: v1.LabelTopologyZone, Operator: v1.NodeSelectorOpIn, Values: []string{"zone-a"}},
		{Key: v1.LabelTopologyRegion, Operator: v1.NodeSelectorOpIn, Values: []string{"region-1"}}}}}}}
	return pv
}

type forwarder struct {
	name string
	pv   func() *v1.PersistentVolume
	ours func(*v1.PersistentVolume) (*v1.PersistentVolume, error)
	// theirs is csi-translation-lib's CSITranslator path: a DeepCopy (it
	// modifies its input) and the plugin.
	theirs func(*v1.PersistentVolume) (*v1.PersistentVolume, error)
}

var forwarders = []forwarder{
	{"RBD", rbdPV,
		func(pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
			return rbd.New(rbd.Options{}).TranslateInTreePVToCSI(logger, pv)
		},
		func(pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
			return upstream.NewRBDCSITranslator().TranslateInTreePVToCSI(pv.DeepCopy())
		}},
	{"vSphere", vspherePV,
		func(pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
			return vsphere.New(vsphere.Options{}).TranslateInTreePVToCSI(logger, pv)
		},
		func(pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
			return upstream.NewvSphereCSITranslator().TranslateInTreePVToCSI(pv.DeepCopy())
		}},
}

func BenchmarkForwardPV(b *testing.B) {
	for _, f := range forwarders {
		pv := f.pv()
		b.Run(f.name+"/DeepCopy", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = pv.DeepCopy()
			}
		})
		b.Run(f.name+"/csimigrate", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.ours(pv); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(f.name+"/csi-translation-lib", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.theirs(pv); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkReversePV(b *testing.B) {
	for _, f := range forwarders {
		csi, err := f.ours(f.pv())
		if err != nil {
			b.Fatal(err)
		}
		csi.Spec.CSI.VolumeAttributes["initialvolumefilepath"] = "[vsanDatastore] kubevols/pvc-1.vmdk"
		p := map[string]interface {
			TranslateCSIPVToInTree(*v1.PersistentVolume) (*v1.PersistentVolume, error)
		}{"RBD": rbd.New(rbd.Options{}), "vSphere": vsphere.New(vsphere.Options{})}[f.name]
		u := map[string]upstream.InTreePlugin{"RBD": upstream.NewRBDCSITranslator(), "vSphere": upstream.NewvSphereCSITranslator()}[f.name]
		b.Run(f.name+"/csimigrate", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.TranslateCSIPVToInTree(csi); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(f.name+"/csi-translation-lib", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := u.TranslateCSIPVToInTree(csi.DeepCopy()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkStorageClass(b *testing.B) {
	scs := map[string]*storagev1.StorageClass{
		"RBD": {ObjectMeta: metav1.ObjectMeta{Name: "rbd"}, Provisioner: "kubernetes.io/rbd", Parameters: map[string]string{
			"monitors": "10.70.53.126:6789,10.70.53.127:6789", "adminId": "admin", "adminSecretName": "ceph-admin", "adminSecretNamespace": "kube-system",
			"pool": "kube", "imageFormat": "2", "imageFeatures": "layering"}},
		"vSphere": {ObjectMeta: metav1.ObjectMeta{Name: "vs"}, Provisioner: "kubernetes.io/vsphere-volume", Parameters: map[string]string{
			"storagepolicyname": "gold", "datastore": "vsanDatastore", "diskformat": "thin", "fstype": "ext4"}},
	}
	for _, name := range []string{"RBD", "vSphere"} {
		sc := scs[name]
		p := map[string]interface {
			TranslateInTreeStorageClassToCSI(logger interface{}, sc *storagev1.StorageClass) (*storagev1.StorageClass, error)
		}{}
		_ = p
		b.Run(name+"/csimigrate", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if name == "RBD" {
					_, err = rbd.New(rbd.Options{}).TranslateInTreeStorageClassToCSI(logger, sc)
				} else {
					_, err = vsphere.New(vsphere.Options{}).TranslateInTreeStorageClassToCSI(logger, sc)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/csi-translation-lib", func(b *testing.B) {
			u := map[string]upstream.InTreePlugin{"RBD": upstream.NewRBDCSITranslator(), "vSphere": upstream.NewvSphereCSITranslator()}[name]
			b.ReportAllocs()
			for b.Loop() {
				if _, err := u.TranslateInTreeStorageClassToCSI(sc.DeepCopy()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

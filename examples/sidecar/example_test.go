package sidecar_test

import (
	"fmt"
	"log"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/examples/sidecar"
	"github.com/csimigrate/csimigrate/plugins/ceph"
)

// The provisioner beside Rook's RBD driver serves a claim of an in-tree RBD
// class: it provisions with the class's CSI form, stores the PV in-tree, and
// deletes it with the handle it provisioned.
func Example() {
	// The driver's config.json (its ConfigMap): the migration entry of the
	// class's monitors, as csimigrate plan gives it.
	cfg, err := ceph.ParseClusterConfig([]byte(`[{"clusterID":"b7f67366bb43f32e07d8a261a7840da9","monitors":["10.70.53.126:6789"]}]`))
	if err != nil {
		log.Fatal(err)
	}
	m, err := sidecar.New("kubernetes.io/rbd", "rook-ceph.rbd.csi.ceph.com", cfg)
	if err != nil {
		log.Fatal(err)
	}
	logger := klog.Background()
	class := &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: "fast"},
		Provisioner: "kubernetes.io/rbd",
		Parameters: map[string]string{
			"monitors": "10.70.53.126:6789", "pool": "replicapool", "imageFeatures": "layering",
			"adminId": "admin", "adminSecretName": "ceph-admin", "adminSecretNamespace": "kube-system",
		},
	}
	csiClass, ok, err := m.Class(logger, class)
	if err != nil || !ok {
		log.Fatal(ok, err)
	}
	fmt.Println(csiClass.Provisioner)
	for _, k := range slices.Sorted(maps.Keys(csiClass.Parameters)) {
		fmt.Printf("  %s=%s\n", k, csiClass.Parameters[k])
	}

	// What the driver returned for the claim, as the provisioner builds it.
	provisioned := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-6a0a3ed2"},
		Spec: v1.PersistentVolumeSpec{
			Capacity:    v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
				Driver:       csiClass.Provisioner,
				VolumeHandle: "mig_mons-b7f67366bb43f32e07d8a261a7840da9_image-6a0a3ed2-0c1b-4a3c-9d1e-1a2b3c4d5e6f_7265706c696361706f6f6c",
				VolumeAttributes: map[string]string{"clusterID": csiClass.Parameters["clusterID"], "pool": "replicapool",
					"imageName": "kubernetes-dynamic-pvc-6a0a3ed2-0c1b-4a3c-9d1e-1a2b3c4d5e6f", "imageFeatures": "layering"},
			}},
		},
	}
	stored, err := m.Stored(provisioned)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored:", stored.Spec.RBD.RBDImage, stored.Spec.RBD.CephMonitors)
	del, err := m.ToDelete(logger, stored)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("deleted by:", del.Spec.CSI.Driver, del.Spec.CSI.VolumeHandle == provisioned.Spec.CSI.VolumeHandle)
	// Output:
	// rook-ceph.rbd.csi.ceph.com
	//   adminId=admin
	//   clusterID=b7f67366bb43f32e07d8a261a7840da9
	//   csi.storage.k8s.io/controller-expand-secret-name=ceph-admin
	//   csi.storage.k8s.io/controller-expand-secret-namespace=kube-system
	//   csi.storage.k8s.io/node-expand-secret-name=ceph-admin
	//   csi.storage.k8s.io/node-expand-secret-namespace=kube-system
	//   csi.storage.k8s.io/node-stage-secret-name=ceph-admin
	//   csi.storage.k8s.io/node-stage-secret-namespace=kube-system
	//   csi.storage.k8s.io/provisioner-secret-name=ceph-admin
	//   csi.storage.k8s.io/provisioner-secret-namespace=kube-system
	//   imageFeatures=layering
	//   migration=true
	//   monitors=10.70.53.126:6789
	//   pool=replicapool
	// stored: kubernetes-dynamic-pvc-6a0a3ed2-0c1b-4a3c-9d1e-1a2b3c4d5e6f [10.70.53.126:6789]
	// deleted by: rook-ceph.rbd.csi.ceph.com true
}

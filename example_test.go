package csimigrate_test

import (
	"fmt"
	"log"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/translate"
)

// Translate an in-tree RBD PV to CSI and back.
func Example() {
	tr, err := translate.New()
	if err != nil {
		log.Fatal(err)
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-1"},
		Spec: v1.PersistentVolumeSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeSource: v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{
				CephMonitors: []string{"10.70.53.126:6789"},
				RBDImage:     "kubernetes-dynamic-pvc-e4111eb6-4088-11ec-b823-0242ac110003",
				RBDPool:      "replicapool",
				SecretRef:    &v1.SecretReference{Name: "ceph-secret", Namespace: "kube-system"},
			}},
		},
	}
	csi, err := tr.TranslateInTreePVToCSI(klog.Background(), pv)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(csi.Spec.CSI.Driver)
	fmt.Println(csi.Spec.CSI.VolumeHandle)
	fmt.Println(csi.Spec.CSI.NodeExpandSecretRef.Name)
	back, err := tr.TranslateCSIPVToInTree(csi)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(back.Spec.RBD.RBDImage == pv.Spec.RBD.RBDImage, back.Annotations == nil)
	// Output:
	// rbd.csi.ceph.com
	// mig_mons-b7f67366bb43f32e07d8a261a7840da9_image-e4111eb6-4088-11ec-b823-0242ac110003_7265706c696361706f6f6c
	// ceph-secret
	// true true
}

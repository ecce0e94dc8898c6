package kcmfork_test

import (
	"fmt"
	"log"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/examples/kcmfork"
	"github.com/csimigrate/csimigrate/featuregate"
)

// A kube-controller-manager 1.30 resolves an in-tree RBD PV: served in-tree
// with the release's defaults, through Rook's Ceph CSI driver once
// CSIMigrationRBD is on.
func Example() {
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
	for _, set := range []string{"", "CSIMigrationRBD=true"} {
		gates, err := featuregate.ForVersion(30)
		if err != nil {
			log.Fatal(err)
		}
		if set != "" {
			if err := gates.Set(set); err != nil {
				log.Fatal(err)
			}
		}
		r, err := kcmfork.NewResolver(gates, 30, map[string]string{"kubernetes.io/rbd": "rook-ceph.rbd.csi.ceph.com"})
		if err != nil {
			log.Fatal(err)
		}
		out, csi, err := r.PV(klog.Background(), pv)
		if err != nil {
			log.Fatal(err)
		}
		if !csi {
			fmt.Printf("%q: in-tree, image %s\n", set, out.Spec.RBD.RBDImage)
			continue
		}
		fmt.Printf("%q: %s %s\n", set, out.Spec.CSI.Driver, out.Spec.CSI.VolumeHandle)
	}
	// Output:
	// "": in-tree, image kubernetes-dynamic-pvc-e4111eb6-4088-11ec-b823-0242ac110003
	// "CSIMigrationRBD=true": rook-ceph.rbd.csi.ceph.com mig_mons-b7f67366bb43f32e07d8a261a7840da9_image-e4111eb6-4088-11ec-b823-0242ac110003_7265706c696361706f6f6c
}

package volumeid_test

import (
	"errors"
	"fmt"

	"github.com/csimigrate/csimigrate/volumeid"
)

func ExampleClusterID() {
	fmt.Println(volumeid.ClusterID("10.70.53.126:6789"))
	// Output: b7f67366bb43f32e07d8a261a7840da9
}

func ExampleNewRBDHandle() {
	h, err := volumeid.NewRBDHandle([]string{"10.70.53.126:6789"}, "replicapool", "kubernetes-dynamic-pvc-e4111eb6-4088-11ec-b823-0242ac110003")
	fmt.Println(h, err)
	// A static image without the dynamic prefix: Ceph CSI reads another image.
	_, err = volumeid.NewRBDHandle([]string{"10.70.53.126:6789"}, "replicapool", "reports")
	var ue *volumeid.UnrepresentableError
	if errors.As(err, &ue) {
		fmt.Println("Ceph CSI would act on", ue.CephCSIReads.Image)
	}
	// Output:
	// mig_mons-b7f67366bb43f32e07d8a261a7840da9_image-e4111eb6-4088-11ec-b823-0242ac110003_7265706c696361706f6f6c <nil>
	// Ceph CSI would act on kubernetes-dynamic-pvc-reports
}

func ExampleParseCephCSIVolumeID() {
	id, err := volumeid.ParseCephCSIVolumeID("0001-0020-b7f67366bb43f32e07d8a261a7840da9-0000000000000002-c867ff35-3f04-11ec-b823-0242ac110003")
	fmt.Println(id.ClusterID, id.Location, id.ObjectUUID, err)
	// Output: b7f67366bb43f32e07d8a261a7840da9 2 c867ff35-3f04-11ec-b823-0242ac110003 <nil>
}

func ExampleParseVSpherePath() {
	p, _ := volumeid.ParseVSpherePath("[DatastoreCluster/ds 1] kubevols/pvc-1.vmdk")
	fmt.Printf("%q %q %q\n", p.Cluster(), p.DatastoreName(), p.Path)
	// Output: "DatastoreCluster" "ds 1" "kubevols/pvc-1.vmdk"
}

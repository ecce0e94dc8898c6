package staged_test

import (
	"fmt"

	"github.com/csimigrate/csimigrate/featuregate/staged"
)

func ExampleNextStep() {
	cfg := staged.Config{MigrationMinor: 26, LegacyProvisioner: "kubernetes.io/vsphere-volume", LegacyStorageClassNames: []string{"default"}}
	obs := staged.ObservedCluster{ControlPlaneExists: true, Minor: 26, KubeletMinors: map[string]int{"n1": 25},
		StorageClasses: []staged.StorageClassRef{{Name: "default", Provisioner: "kubernetes.io/vsphere-volume"}}}
	fmt.Println(staged.NextStep(cfg, obs).Action)
	obs.KubeletMinors["n1"] = 26
	fmt.Println(staged.NextStep(cfg, obs).Action)
	// Output:
	// Requeue
	// DeleteStorageClasses
}

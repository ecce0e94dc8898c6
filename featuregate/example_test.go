package featuregate_test

import (
	"fmt"

	"github.com/csimigrate/csimigrate/featuregate"
)

// Who handles in-tree RBD volumes in a 1.28 cluster with migration turned on.
func ExampleOwnerOf() {
	fg, _ := featuregate.ForVersion(28)
	fmt.Println(featuregate.OwnerOf(fg, 28, featuregate.RBD))
	_ = fg.Set("CSIMigrationRBD=true")
	fmt.Println(featuregate.OwnerOf(fg, 28, featuregate.RBD))
	fg31, _ := featuregate.ForVersion(31)
	fmt.Println(featuregate.OwnerOf(fg31, 31, featuregate.RBD), fg31.Set("CSIMigrationRBD=true"))
	// Output:
	// in-tree
	// csi
	// none unrecognized feature gate: CSIMigrationRBD
}

func ExampleNextStep() {
	cfg := featuregate.StagedConfig{MigrationMinor: 26, LegacyProvisioner: "kubernetes.io/vsphere-volume", LegacyStorageClassNames: []string{"default"}}
	obs := featuregate.ObservedCluster{ControlPlaneExists: true, Minor: 26, KubeletMinors: map[string]int{"n1": 25},
		StorageClasses: []featuregate.StorageClassRef{{Name: "default", Provisioner: "kubernetes.io/vsphere-volume"}}}
	fmt.Println(featuregate.NextStep(cfg, obs).Action)
	obs.KubeletMinors["n1"] = 26
	fmt.Println(featuregate.NextStep(cfg, obs).Action)
	// Output:
	// Requeue
	// DeleteStorageClasses
}

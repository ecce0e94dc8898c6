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

package envcheck_test

import (
	"fmt"

	"github.com/csimigrate/csimigrate/plugins/vsphere/envcheck"
)

// The checks a driver operator runs before installing or upgrading the
// vSphere CSI driver.
func ExampleCheck() {
	for _, r := range envcheck.Check(envcheck.Environment{
		VCenterVersion: "7.0 U3c",
		Hosts:          []envcheck.Host{{Name: "esx1", Version: "6.7.0 build 1234"}},
		VMs:            []envcheck.VM{{Name: "node-1", HardwareVersion: "vmx-13"}},
	}) {
		fmt.Println(r.Code, r.Object, r.Severity)
	}
	// Output:
	// check_deprecated_hw_version vm/node-1 Blocker
	// check_deprecated_esxi_version host/esx1 Blocker
}

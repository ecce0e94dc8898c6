package plugin_test

import (
	"testing"

	"github.com/csimigrate/csimigrate/plugin"
)

func TestInTreeNameOfProvisioner(t *testing.T) {
	for p, want := range map[string]string{
		"kubernetes.io/rbd": "kubernetes.io/rbd", "kubernetes.io/cephfs": "kubernetes.io/cephfs",
		"kubernetes.io/vsphere-volume": "kubernetes.io/vsphere-volume", "kubernetes.io/gce-pd": "kubernetes.io/gce-pd",
		"ceph.com/rbd": "kubernetes.io/rbd", "ceph.com/cephfs": "kubernetes.io/cephfs",
		"rbd.csi.ceph.com": "", "ceph.com/RBD": "", "": "", "kubernetes.io/no-provisioner": "",
	} {
		if got := plugin.InTreeNameOfProvisioner(p); got != want {
			t.Errorf("InTreeNameOfProvisioner(%q) = %q, want %q", p, got, want)
		}
	}
}

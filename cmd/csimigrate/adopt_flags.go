package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/apply"
)

// The help of the flags rewrite and the controller share, written once;
// each command leads or follows it with what is its own.
const (
	adoptUsage = "make each in-tree RBD volume (and, with -cephfs-secret, each CephFS volume) one of Ceph CSI's own as it is " +
		"rewritten: registered in Ceph CSI's journal where it can be (snapshots, clones), read and written with Ceph's own tools " +
		"(rbd, rados, ceph); with -vsphere-conf or -vsphere-secret, each in-tree vSphere volume too: its disk registered as a " +
		"First Class Disk and CNS volume in vCenter, the PV given that ID (snapshots)"
	cephFSSecretUsage = "with -adopt: namespace/name of the Secret with adminID and adminKey that Ceph CSI's CephFS driver reads for " +
		"its own volumes (the one its StorageClass names); adopted CephFS volumes name it for staging, expansion and deletion. " +
		"Without it CephFS volumes stay static"
	onlineUsage = "rewrite PVs that running pods use, where the kubelet of every such pod's node and kube-controller-manager " +
		"already handle the plugin as CSI"
)

// adoptFlags are -adopt and the flags it takes (Ceph's tools,
// -cephfs-secret, vCenter), declared once for rewrite and the controller.
type adoptFlags struct {
	adopt     bool
	cephFlags cephToolFlags
	// cephfsSecretArg is -cephfs-secret as given; cephfsSecret the Secret
	// it names, once completed (nil without it).
	cephfsSecretArg string
	cephfsSecret    *v1.SecretReference
	vsphere         vsphereFlags
}

// register adds the flags; -adopt's help is lead, the shared text and
// more.
func (f *adoptFlags) register(fs *flag.FlagSet, lead, more string) {
	fs.BoolVar(&f.adopt, "adopt", false, lead+adoptUsage+more)
	f.cephFlags.register(fs, "-adopt")
	fs.StringVar(&f.cephfsSecretArg, "cephfs-secret", "", cephFSSecretUsage)
	f.vsphere.register(fs, false)
}

// complete parses -cephfs-secret and the vSphere flags.
func (f *adoptFlags) complete(fs *flag.FlagSet) error {
	f.vsphere.complete(fs)
	if f.cephfsSecretArg == "" {
		return nil
	}
	ref, err := secretRef(f.cephfsSecretArg)
	if err != nil {
		return fmt.Errorf("-cephfs-secret %q: %w", f.cephfsSecretArg, err)
	}
	f.cephfsSecret = ref
	return nil
}

// validate refuses the flags -adopt takes without -adopt; also names other
// flags given that take it.
func (f *adoptFlags) validate(also ...string) error {
	switch {
	case !f.adopt && (len(also) > 0 || f.cephFlags.given() || f.cephfsSecret != nil):
		return errors.New(strings.Join(append(also, "-ceph-conf", "-ceph-id", "-ceph-keyring", "-ceph-command-prefix"), ", ") + " and -cephfs-secret only with -adopt")
	case !f.adopt && f.vsphere.wanted():
		return errors.New("-vsphere-conf and -vsphere-secret only with -adopt")
	}
	return nil
}

// cephAccess is the Ceph access of -adopt (nil without it).
func (f *adoptFlags) cephAccess() apply.Ceph {
	if !f.adopt {
		return nil
	}
	return f.cephFlags.tools
}

package cli

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
	OnlineUsage = "rewrite PVs that running pods use, where the kubelet of every such pod's node and kube-controller-manager " +
		"already handle the plugin as CSI"
)

// AdoptFlags are -adopt and the flags it takes (Ceph's tools,
// -cephfs-secret, vCenter), declared once for rewrite and the controller.
type AdoptFlags struct {
	Adopt     bool
	CephFlags CephToolFlags
	// cephfsSecretArg is -cephfs-secret as given; cephfsSecret the Secret
	// it names, once completed (nil without it).
	cephfsSecretArg string
	CephFSSecret    *v1.SecretReference
	VSphere         VSphereFlags
}

// Register adds the flags; -adopt's help is lead, the shared text and
// more.
func (f *AdoptFlags) Register(fs *flag.FlagSet, lead, more string) {
	fs.BoolVar(&f.Adopt, "adopt", false, lead+adoptUsage+more)
	f.CephFlags.Register(fs, "-adopt")
	fs.StringVar(&f.cephfsSecretArg, "cephfs-secret", "", cephFSSecretUsage)
	f.VSphere.Register(fs, false)
}

// Complete parses -cephfs-secret and the vSphere flags.
func (f *AdoptFlags) Complete(fs *flag.FlagSet) error {
	f.VSphere.Complete(fs)
	if f.cephfsSecretArg == "" {
		return nil
	}
	ref, err := SecretRef(f.cephfsSecretArg)
	if err != nil {
		return fmt.Errorf("-cephfs-secret %q: %w", f.cephfsSecretArg, err)
	}
	f.CephFSSecret = ref
	return nil
}

// Validate refuses the flags -adopt takes without -adopt; also names other
// flags given that take it.
func (f *AdoptFlags) Validate(also ...string) error {
	switch {
	case !f.Adopt && (len(also) > 0 || f.CephFlags.Given() || f.CephFSSecret != nil):
		return errors.New(strings.Join(append(also, "-ceph-conf", "-ceph-id", "-ceph-keyring", "-ceph-command-prefix"), ", ") + " and -cephfs-secret only with -adopt")
	case !f.Adopt && f.VSphere.Wanted():
		return errors.New("-vsphere-conf and -vsphere-secret only with -adopt")
	}
	return nil
}

// CephAccess is the Ceph access of -adopt (nil without it).
func (f *AdoptFlags) CephAccess() apply.Ceph {
	if !f.Adopt {
		return nil
	}
	return f.CephFlags.Tools
}

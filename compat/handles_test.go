package compat

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	upstream "k8s.io/csi-translation-lib/plugins"

	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/internal/testsupport/peertest"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
)

func stockOf(p upstream.InTreePlugin) peertest.Stock {
	return peertest.Stock{Forward: p.TranslateInTreePVToCSI, Reverse: p.TranslateCSIPVToInTree, Inline: p.TranslateInTreeInlineVolumeToCSI}
}

// rbdCase runs csimigrate's RBD plugin as a cluster would: with Ceph CSI's
// cluster config holding the monitors of the volume.
var rbdCase = peertest.Case{
	Ours: func(inTree *v1.PersistentVolume) plugin.InTreePlugin {
		var cfg ceph.ClusterConfig
		if inTree != nil {
			cfg = ceph.NewClusterConfig(ceph.EntryFor(inTree.Spec.RBD.CephMonitors))
		}
		return rbd.New(rbd.Options{ClusterConfig: cfg})
	},
	Stock:        stockOf(upstream.NewRBDCSITranslator()),
	InTree:       gen.RBDPV,
	Provisioned:  gen.RBDProvisionedPV,
	Inline:       gen.RBDInline,
	StockRejects: peertest.RBDStockRejects,
}

var vsphereCase = peertest.Case{
	Ours:         func(*v1.PersistentVolume) plugin.InTreePlugin { return vsphere.New(vsphere.Options{}) },
	Stock:        stockOf(upstream.NewvSphereCSITranslator()),
	InTree:       gen.VSpherePV,
	Provisioned:  gen.VSphereProvisionedPV,
	Inline:       gen.VSphereInline,
	StockRejects: peertest.VSphereStockRejects,
	Deliberate:   peertest.VSphereDeliberate,
}

// Whatever library a component runs, a stored in-tree PV names one volume:
// the same driver and handle, VolumeAttachment and kubelet volume name.
func TestRBDHandlesAgreeWithUpstream(t *testing.T) {
	n := peertest.Handles(t, rbdCase)
	if n.StockReverse == 0 {
		t.Errorf("no stock reverse translation was checked: %+v", n)
	}
}

func TestVSphereHandlesAgreeWithUpstream(t *testing.T) {
	n := peertest.Handles(t, vsphereCase)
	if n.StockReverse == 0 || n.StockRejected == 0 {
		t.Errorf("a check was never reached: %+v", n)
	}
}

func TestRBDInlineHandlesAgreeWithUpstream(t *testing.T) {
	if failed := peertest.Inline(t, rbdCase); failed != 0 {
		t.Errorf("the stock translator failed on %d inline RBD volumes", failed)
	}
}

func TestVSphereInlineHandlesAgreeWithUpstream(t *testing.T) {
	// csi-translation-lib panics on inline volumes with a storage policy
	// (a nil PV dereferenced); the rest must agree.
	peertest.Inline(t, vsphereCase)
}

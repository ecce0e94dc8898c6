package compat37

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	upstream "k8s.io/csi-translation-lib/plugins"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/internal/testsupport/peertest"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
)

// The newest csi-translation-lib release still translates vSphere in every
// stock kubelet and kube-controller-manager: a stored in-tree PV names the
// same volume whichever library a component runs.
var vsphereCase = func() peertest.Case {
	p := upstream.NewvSphereCSITranslator()
	logger := klog.Background().V(100)
	return peertest.Case{
		Ours: func(*v1.PersistentVolume) plugin.InTreePlugin { return vsphere.New(vsphere.Options{}) },
		Stock: peertest.Stock{
			Forward: func(pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
				return p.TranslateInTreePVToCSI(logger, pv)
			},
			Reverse: p.TranslateCSIPVToInTree,
			Inline: func(vol *v1.Volume, ns string) (*v1.PersistentVolume, error) {
				return p.TranslateInTreeInlineVolumeToCSI(logger, vol, ns)
			},
		},
		InTree:       gen.VSpherePV,
		Provisioned:  gen.VSphereProvisionedPV,
		Inline:       gen.VSphereInline,
		StockRejects: peertest.VSphereStockRejects,
		Deliberate:   peertest.VSphereDeliberate,
	}
}()

func TestVSphereHandlesAgreeWithUpstream(t *testing.T) {
	n := peertest.Handles(t, vsphereCase)
	if n.StockReverse == 0 || n.StockRejected == 0 {
		t.Errorf("a check was never reached: %+v", n)
	}
}

func TestVSphereInlineHandlesAgreeWithUpstream(t *testing.T) {
	// Stock panics on inline volumes with a storage policy; the rest agree.
	peertest.Inline(t, vsphereCase)
}

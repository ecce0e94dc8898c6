package translate_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/translate"
)

// A translator given the names a cluster's drivers run under translates
// exactly as the default one, with those names in place of the upstream
// ones, and translates back only the PVs of its drivers, losslessly.
func TestDriverNames(t *testing.T) {
	def := mustNew(t)
	rapid.Check(t, func(t *rapid.T) {
		prefix := gen.DNSLabel().Draw(t, "prefix")
		names := map[string]string{
			plugin.RBDInTreePluginName:    prefix + "." + plugin.RBDDriverName,
			plugin.CephFSInTreePluginName: prefix + "." + plugin.CephFSDriverName,
		}
		tr, err := def.WithDriverNames(names)
		if err != nil {
			t.Fatal(err)
		}
		var pv *v1.PersistentVolume
		inTree := rapid.SampledFrom([]string{plugin.RBDInTreePluginName, plugin.CephFSInTreePluginName, plugin.VSphereInTreePluginName}).Draw(t, "plugin")
		switch inTree {
		case plugin.RBDInTreePluginName:
			pv = gen.RBDPV(t)
		case plugin.CephFSInTreePluginName:
			pv = gen.CephFSPV(t, false)
		default:
			pv = gen.VSpherePV(t)
		}
		want, wantErr := def.TranslateInTreePVToCSI(logger, pv)
		got, err := tr.TranslateInTreePVToCSI(logger, pv)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("error %v, the default translator's %v", err, wantErr)
		}
		if err != nil {
			return
		}
		driver := plugin.UpstreamDriverName(inTree)
		if n, ok := names[inTree]; ok {
			driver = n
		}
		if got.Spec.CSI.Driver != driver {
			t.Fatalf("driver %q, want %q", got.Spec.CSI.Driver, driver)
		}
		if d, _ := tr.GetCSINameFromInTreeName(inTree); d != driver {
			t.Fatalf("GetCSINameFromInTreeName: %q, want %q", d, driver)
		}
		want = want.DeepCopy()
		want.Spec.CSI.Driver = driver
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("translation other than the default one's beyond the driver (-want +got):\n%s", diff)
		}
		back, err := tr.TranslateCSIPVToInTree(got)
		if err != nil {
			t.Fatalf("back: %v", err)
		}
		again, err := tr.TranslateInTreePVToCSI(logger, back)
		if err != nil {
			t.Fatalf("forward again: %v", err)
		}
		if diff := cmp.Diff(got, again); diff != "" {
			t.Fatalf("round trip (-first +again):\n%s", diff)
		}
		if inTree != plugin.VSphereInTreePluginName {
			// The upstream name is not this cluster's driver.
			other := got.DeepCopy()
			other.Spec.CSI.Driver = plugin.UpstreamDriverName(inTree)
			if _, err := tr.TranslateCSIPVToInTree(other); err == nil {
				t.Fatalf("a PV of %s translated back by a translator of %s", other.Spec.CSI.Driver, driver)
			}
		}
	})
}

func TestDriverNameRefused(t *testing.T) {
	for _, tc := range []struct{ inTree, driver string }{
		{plugin.RBDInTreePluginName, plugin.CephFSDriverName},
		{plugin.RBDInTreePluginName, "rbd.csi.ceph.com.evil"},
		{plugin.RBDInTreePluginName, ".rbd.csi.ceph.com"},
		{plugin.RBDInTreePluginName, ""},
		{plugin.VSphereInTreePluginName, "x.csi.vsphere.vmware.com"},
		{plugin.AWSEBSInTreePluginName, "ebs.csi.aws.com"},
		{plugin.CephFSInTreePluginName, "a-very-long-prefix-that-makes-the-name-too-long-for-kubernetes.cephfs.csi.ceph.com"},
	} {
		_, err := translate.New(translate.WithDriverName(tc.inTree, tc.driver))
		if !errors.Is(err, translate.ErrDriverName) {
			t.Errorf("%s -> %q: error %v, want ErrDriverName", tc.inTree, tc.driver, err)
		}
	}
	tr, err := translate.New(translate.WithDriverName(plugin.RBDInTreePluginName, "rook-ceph.rbd.csi.ceph.com"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.IsMigratedCSIDriverByName(plugin.RBDDriverName) || !tr.IsMigratedCSIDriverByName("rook-ceph.rbd.csi.ceph.com") {
		t.Error("IsMigratedCSIDriverByName does not follow the driver name")
	}
	if tr.IsMigratedCSIDriverByName(plugin.CephFSDriverName) != true {
		t.Error("a plugin not renamed lost its upstream name")
	}
}

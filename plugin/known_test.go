package plugin_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/plugin"
)

// Each known in-tree plugin is named by its source, in a PV and in a pod's
// volume alike; no source names none.
func TestInTreeNames(t *testing.T) {
	pvs := map[string]v1.PersistentVolumeSource{
		plugin.RBDInTreePluginName:       {RBD: &v1.RBDPersistentVolumeSource{}},
		plugin.CephFSInTreePluginName:    {CephFS: &v1.CephFSPersistentVolumeSource{}},
		plugin.VSphereInTreePluginName:   {VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{}},
		plugin.AWSEBSInTreePluginName:    {AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{}},
		plugin.GCEPDInTreePluginName:     {GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{}},
		plugin.AzureDiskInTreePluginName: {AzureDisk: &v1.AzureDiskVolumeSource{}},
		plugin.AzureFileInTreePluginName: {AzureFile: &v1.AzureFilePersistentVolumeSource{}},
		plugin.CinderInTreePluginName:    {Cinder: &v1.CinderPersistentVolumeSource{}},
		plugin.PortworxInTreePluginName:  {PortworxVolume: &v1.PortworxVolumeSource{}},
		"":                               {NFS: &v1.NFSVolumeSource{}},
	}
	vols := map[string]v1.VolumeSource{
		plugin.RBDInTreePluginName:       {RBD: &v1.RBDVolumeSource{}},
		plugin.CephFSInTreePluginName:    {CephFS: &v1.CephFSVolumeSource{}},
		plugin.VSphereInTreePluginName:   {VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{}},
		plugin.AWSEBSInTreePluginName:    {AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{}},
		plugin.GCEPDInTreePluginName:     {GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{}},
		plugin.AzureDiskInTreePluginName: {AzureDisk: &v1.AzureDiskVolumeSource{}},
		plugin.AzureFileInTreePluginName: {AzureFile: &v1.AzureFileVolumeSource{}},
		plugin.CinderInTreePluginName:    {Cinder: &v1.CinderVolumeSource{}},
		plugin.PortworxInTreePluginName:  {PortworxVolume: &v1.PortworxVolumeSource{}},
		"":                               {EmptyDir: &v1.EmptyDirVolumeSource{}},
	}
	var known []string
	for name, src := range pvs {
		if got := plugin.InTreeNameOfPV(&v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: src}}); got != name {
			t.Errorf("PV source of %q: got %q", name, got)
		}
		if got := plugin.InTreeNameOfVolume(&v1.Volume{VolumeSource: vols[name]}); got != name {
			t.Errorf("volume source of %q: got %q", name, got)
		}
		if name != "" {
			known = append(known, name)
		}
	}
	if plugin.InTreeNameOfPV(nil) != "" || plugin.InTreeNameOfVolume(nil) != "" {
		t.Error("nil names a plugin")
	}
	less := func(a, b string) bool { return a < b }
	if diff := cmp.Diff(known, plugin.KnownInTreeNames, cmpopts.SortSlices(less)); diff != "" {
		t.Errorf("KnownInTreeNames (-want +got):\n%s", diff)
	}
}

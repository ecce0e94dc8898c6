package compat37

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	csitranslation "k8s.io/csi-translation-lib"
	upstream "k8s.io/csi-translation-lib/plugins"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/cephfs"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
	"github.com/csimigrate/csimigrate/translate"
)

// Upstream's plugins are csimigrate plugins, and csimigrate's are upstream's.
var (
	_ plugin.InTreePlugin   = upstream.NewGCEPersistentDiskCSITranslator()
	_ plugin.InTreePlugin   = upstream.NewvSphereCSITranslator()
	_ upstream.InTreePlugin = rbd.New(rbd.Options{})
	_ upstream.InTreePlugin = cephfs.New(cephfs.Options{})
	_ upstream.InTreePlugin = vsphere.New(vsphere.Options{})
)

func TestUpstreamPluginRegisteredHere(t *testing.T) {
	tr, err := translate.New(translate.WithPlugins(upstream.NewGCEPersistentDiskCSITranslator()))
	if err != nil {
		t.Fatal(err)
	}
	pv := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{
		AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		PersistentVolumeSource: v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "disk-1"}},
	}}
	orig := pv.DeepCopy()
	got, err := tr.TranslateInTreePVToCSI(klog.Background(), pv)
	if err != nil {
		t.Fatal(err)
	}
	want, err := csitranslation.New().TranslateInTreePVToCSI(klog.Background(), orig.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-upstream +through csimigrate):\n%s", diff)
	}
	if diff := cmp.Diff(orig, pv); diff != "" {
		t.Errorf("the upstream plugin modified the caller's PV through the translator:\n%s", diff)
	}
}

func TestOurPluginRunsUnderUpstreamInterface(t *testing.T) {
	var p upstream.InTreePlugin = rbd.New(rbd.Options{})
	pv := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{
		CephMonitors: []string{"10.70.53.126:6789"}, RBDImage: "kubernetes-dynamic-pvc-1", RBDPool: "rbd"}}}}
	out, err := p.TranslateInTreePVToCSI(klog.Background(), pv)
	if err != nil || out.Spec.CSI.Driver != rbd.DriverName {
		t.Fatalf("%v %v", out, err)
	}
}

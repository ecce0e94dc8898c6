package translate_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storage "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/translate"
)

var logger = klog.Background().V(100)

// The interfaces the sidecars declare for their translator (copied here in
// shape; the sidecars are not imported).
type provisionerTranslator interface {
	TranslateInTreeStorageClassToCSI(logger klog.Logger, inTreePluginName string, sc *storage.StorageClass) (*storage.StorageClass, error)
	TranslateCSIPVToInTree(pv *v1.PersistentVolume) (*v1.PersistentVolume, error)
	IsPVMigratable(pv *v1.PersistentVolume) bool
	TranslateInTreePVToCSI(logger klog.Logger, pv *v1.PersistentVolume) (*v1.PersistentVolume, error)
	IsMigratedCSIDriverByName(csiPluginName string) bool
	IsMigratableIntreePluginByName(inTreePluginName string) bool
}

type attacherTranslator interface {
	TranslateInTreePVToCSI(logger klog.Logger, pv *v1.PersistentVolume) (*v1.PersistentVolume, error)
	IsPVMigratable(pv *v1.PersistentVolume) bool
	TranslateInTreeInlineVolumeToCSI(logger klog.Logger, volume *v1.Volume, podNamespace string) (*v1.PersistentVolume, error)
	RepairVolumeHandle(driver, volumeHandle, nodeID string) (string, error)
}

type resizerTranslator interface {
	TranslateInTreePVToCSI(logger klog.Logger, pv *v1.PersistentVolume) (*v1.PersistentVolume, error)
	IsMigratedCSIDriverByName(csiPluginName string) bool
	GetInTreeNameFromCSIName(pluginName string) (string, error)
}

// csi-translation-lib's CSITranslator method set (v0.37).
type csiTranslator interface {
	provisionerTranslator
	attacherTranslator
	resizerTranslator
	GetInTreePluginNameFromSpec(pv *v1.PersistentVolume, vol *v1.Volume) (string, error)
	GetCSINameFromInTreeName(pluginName string) (string, error)
	IsInlineMigratable(vol *v1.Volume) bool
}

var _ csiTranslator = (*translate.Translator)(nil)

func TestBuiltins(t *testing.T) {
	tr := mustNew(t)
	var got []string
	for _, p := range tr.Plugins() {
		got = append(got, p.GetInTreePluginName()+"="+p.GetCSIPluginName())
	}
	want := []string{"kubernetes.io/cephfs=cephfs.csi.ceph.com", "kubernetes.io/rbd=rbd.csi.ceph.com", "kubernetes.io/vsphere-volume=csi.vsphere.vmware.com"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for in, csi := range map[string]string{"kubernetes.io/rbd": "rbd.csi.ceph.com", "kubernetes.io/cephfs": "cephfs.csi.ceph.com", "kubernetes.io/vsphere-volume": "csi.vsphere.vmware.com"} {
		if n, err := tr.GetCSINameFromInTreeName(in); err != nil || n != csi {
			t.Errorf("GetCSINameFromInTreeName(%s) = %s, %v", in, n, err)
		}
		if n, err := tr.GetInTreeNameFromCSIName(csi); err != nil || n != in {
			t.Errorf("GetInTreeNameFromCSIName(%s) = %s, %v", csi, n, err)
		}
		if !tr.IsMigratableIntreePluginByName(in) || !tr.IsMigratedCSIDriverByName(csi) {
			t.Errorf("%s not migratable", in)
		}
	}
	if _, err := tr.GetCSINameFromInTreeName("kubernetes.io/nfs"); !errors.Is(err, translate.ErrNoPlugin) {
		t.Errorf("err = %v", err)
	}
}

// A plugin that claims a driver, records calls and modifies its input as
// csi-translation-lib's plugins may.
type fakePlugin struct {
	inTree, driver string
	calls          int
}

func (f *fakePlugin) TranslateInTreeStorageClassToCSI(_ klog.Logger, sc *storage.StorageClass) (*storage.StorageClass, error) {
	f.calls++
	sc.Provisioner = f.driver
	return sc, nil
}
func (f *fakePlugin) TranslateInTreeInlineVolumeToCSI(_ klog.Logger, v *v1.Volume, _ string) (*v1.PersistentVolume, error) {
	f.calls++
	v.Name = "mutated"
	return &v1.PersistentVolume{}, nil
}
func (f *fakePlugin) TranslateInTreePVToCSI(_ klog.Logger, pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	f.calls++
	pv.Spec.NFS = nil
	pv.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: f.driver, VolumeHandle: "h"}
	return pv, nil
}
func (f *fakePlugin) TranslateCSIPVToInTree(pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	f.calls++
	pv.Spec.CSI = nil
	return pv, nil
}
func (f *fakePlugin) CanSupport(pv *v1.PersistentVolume) bool { return pv != nil && pv.Spec.NFS != nil }
func (f *fakePlugin) CanSupportInline(v *v1.Volume) bool      { return v != nil && v.NFS != nil }
func (f *fakePlugin) GetInTreePluginName() string             { return f.inTree }
func (f *fakePlugin) GetCSIPluginName() string                { return f.driver }
func (f *fakePlugin) RepairVolumeHandle(h, n string) (string, error) {
	return h + "@" + n, nil
}

// mustNew returns a Translator with the built-in plugins and default options.
func mustNew(t testing.TB) *translate.Translator {
	t.Helper()
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestWithPluginsCopiesForMutatingPlugins(t *testing.T) {
	f := &fakePlugin{inTree: "kubernetes.io/nfs", driver: "nfs.csi.k8s.io"}
	tr, err := translate.New(translate.WithPlugins(f))
	if err != nil {
		t.Fatal(err)
	}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: v1.PersistentVolumeSpec{
		PersistentVolumeSource: v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/"}}}}
	orig := pv.DeepCopy()
	out, err := tr.TranslateInTreePVToCSI(logger, pv)
	if err != nil || out.Spec.CSI == nil {
		t.Fatalf("%v %v", out, err)
	}
	if diff := cmp.Diff(orig, pv); diff != "" {
		t.Errorf("input modified:\n%s", diff)
	}
	vol := &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{}}}
	pvIn, err := tr.TranslateInTreeInlineVolumeToCSI(logger, vol, "ns")
	if err != nil || vol.Name != "v" {
		t.Fatalf("inline: %v, name %q", err, vol.Name)
	}
	if pvIn.Spec.VolumeMode == nil || *pvIn.Spec.VolumeMode != v1.PersistentVolumeFilesystem {
		t.Error("inline volume mode not defaulted to Filesystem")
	}
	if h, _ := tr.RepairVolumeHandle("nfs.csi.k8s.io", "h", "node"); h != "h@node" {
		t.Errorf("repair %q", h)
	}
	if n, err := tr.GetInTreePluginNameFromSpec(pv, nil); err != nil || n != "kubernetes.io/nfs" {
		t.Errorf("GetInTreePluginNameFromSpec = %q, %v", n, err)
	}
}

func TestConflict(t *testing.T) {
	_, err := translate.New(translate.WithPlugins(&fakePlugin{inTree: "kubernetes.io/other-rbd", driver: rbd.DriverName}))
	if !errors.Is(err, translate.ErrConflict) {
		t.Errorf("err = %v", err)
	}
	// Adding a plugin of a registered in-tree name is refused; replacing it
	// must be asked for, and needs something to replace.
	f := &fakePlugin{inTree: rbd.PluginName, driver: "my-rbd.example.com"}
	if _, err := translate.New(translate.WithPlugins(f)); !errors.Is(err, translate.ErrConflict) || !strings.Contains(err.Error(), rbd.PluginName) {
		t.Errorf("duplicate in-tree name: err = %v", err)
	}
	other := &fakePlugin{inTree: "kubernetes.io/nfs", driver: "nfs.csi.k8s.io"}
	if _, err := translate.New(translate.WithReplacedPlugins(other)); !errors.Is(err, translate.ErrConflict) {
		t.Errorf("replacement of nothing: err = %v", err)
	}
	if _, err := translate.New(translate.WithReplacedPlugins(f, f)); !errors.Is(err, translate.ErrConflict) {
		t.Errorf("two replacements: err = %v", err)
	}
	tr, err := translate.New(translate.WithReplacedPlugins(f))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := tr.GetCSINameFromInTreeName(rbd.PluginName); n != "my-rbd.example.com" {
		t.Errorf("replacement not used: %q", n)
	}
	if tr.IsMigratedCSIDriverByName(rbd.DriverName) {
		t.Error("replaced driver still registered")
	}
}

// Dispatch goes to the plugin of the spec's source and nowhere else.
func TestDispatch(t *testing.T) {
	tr := mustNew(t)
	rapid.Check(t, func(t *rapid.T) {
		var pv *v1.PersistentVolume
		var want string
		switch rapid.IntRange(0, 2).Draw(t, "plugin") {
		case 0:
			pv, want = gen.RBDPV(t), "rbd.csi.ceph.com"
		case 1:
			pv, want = gen.CephFSPV(t, false), "cephfs.csi.ceph.com"
		default:
			pv, want = gen.VSpherePV(t), "csi.vsphere.vmware.com"
		}
		out, err := tr.TranslateInTreePVToCSI(logger, pv)
		if err != nil {
			t.Fatal(err)
		}
		if out.Spec.CSI.Driver != want {
			t.Fatalf("driver %q, want %q", out.Spec.CSI.Driver, want)
		}
		back, err := tr.TranslateCSIPVToInTree(out)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(pv, back); diff != "" {
			t.Fatalf("round trip through the translator (-want +got):\n%s", diff)
		}
	})
}

// TranslateAndCheckPV gives what TranslateInTreePVToCSI, CheckPV and
// GetInTreePluginNameFromSpec give, and leaves its argument as it was.
func TestTranslateAndCheckPV(t *testing.T) {
	tr := mustNew(t)
	rapid.Check(t, func(t *rapid.T) {
		var pv *v1.PersistentVolume
		switch rapid.IntRange(0, 3).Draw(t, "plugin") {
		case 0:
			pv = gen.RBDPV(t)
		case 1:
			pv = gen.CephFSPV(t, false)
		case 2:
			pv = gen.VSpherePV(t)
		default:
			pv = &v1.PersistentVolume{} // no plugin
		}
		orig := pv.DeepCopy()
		csi, findings, name, err := tr.TranslateAndCheckPV(logger, pv)
		wantCSI, wantErr := tr.TranslateInTreePVToCSI(logger, pv)
		wantName, _ := tr.GetInTreePluginNameFromSpec(pv, nil)
		if (err == nil) != (wantErr == nil) || (err != nil && !errors.Is(err, translate.ErrNoPlugin) && err.Error() != wantErr.Error()) {
			t.Fatalf("error %v, want %v", err, wantErr)
		}
		if err == nil {
			if diff := cmp.Diff(wantCSI, csi); diff != "" {
				t.Fatalf("CSI PV (-parts +one):\n%s", diff)
			}
			if diff := cmp.Diff(tr.CheckPV(pv), findings); diff != "" {
				t.Fatalf("findings (-parts +one):\n%s", diff)
			}
			if name != wantName {
				t.Fatalf("plugin %q, want %q", name, wantName)
			}
		}
		if diff := cmp.Diff(orig, pv); diff != "" {
			t.Fatalf("argument modified:\n%s", diff)
		}
	})
	if _, _, _, err := tr.TranslateAndCheckPV(logger, nil); !errors.Is(err, translate.ErrNoPlugin) {
		t.Errorf("nil PV: %v", err)
	}
}

func TestErrors(t *testing.T) {
	tr := mustNew(t)
	if _, err := tr.TranslateInTreePVToCSI(logger, nil); !errors.Is(err, translate.ErrNoPlugin) {
		t.Errorf("nil PV: %v", err)
	}
	if _, err := tr.TranslateInTreePVToCSI(logger, &v1.PersistentVolume{}); !errors.Is(err, translate.ErrNoPlugin) {
		t.Errorf("no source: %v", err)
	}
	if _, err := tr.TranslateCSIPVToInTree(&v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
		CSI: &v1.CSIPersistentVolumeSource{Driver: "x"}}}}); !errors.Is(err, translate.ErrNoPlugin) {
		t.Errorf("unknown driver: %v", err)
	}
	bad := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{}}}}
	if _, err := tr.TranslateInTreePVToCSI(logger, bad); !errors.Is(err, translate.ErrInvalid) {
		t.Errorf("invalid RBD: %v", err)
	}
	if _, err := tr.TranslateInTreeStorageClassToCSI(logger, "kubernetes.io/cephfs", &storage.StorageClass{}); !errors.Is(err, translate.ErrUnsupported) {
		t.Errorf("CephFS SC: %v", err)
	}
	if _, err := tr.GetInTreePluginNameFromSpec(nil, nil); !errors.Is(err, translate.ErrNoPlugin) {
		t.Errorf("nil spec: %v", err)
	}
}

func TestCheckPV(t *testing.T) {
	pv := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{
		CephMonitors: []string{"m:6789"}, RBDImage: "static", SecretRef: &v1.SecretReference{Name: "s", Namespace: "n"}}}}}
	f := mustNew(t).CheckPV(pv)
	if len(f) != 1 || f[0].Code != rbd.FindingHandleResolvesElsewhere {
		t.Errorf("findings %+v", f)
	}
	if mustNew(t).CheckPV(&v1.PersistentVolume{}) != nil {
		t.Error("findings for a PV no plugin handles")
	}
	_ = plugin.SeverityWarning
}

func TestNodeExpandOption(t *testing.T) {
	tr, err := translate.New(translate.WithNodeExpandSecret(false))
	if err != nil {
		t.Fatal(err)
	}
	pv := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{
		CephMonitors: []string{"m:6789"}, RBDImage: "kubernetes-dynamic-pvc-1", RBDPool: "rbd", SecretRef: &v1.SecretReference{Name: "s", Namespace: "n"}}}}}
	out, err := tr.TranslateInTreePVToCSI(logger, pv)
	if err != nil || out.Spec.CSI.NodeExpandSecretRef != nil {
		t.Errorf("node-expand ref %v, err %v", out.Spec.CSI.NodeExpandSecretRef, err)
	}
}

func TestWithFeatureGates(t *testing.T) {
	rbdPV := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{
		CephMonitors: []string{"m:6789"}, RBDImage: "kubernetes-dynamic-pvc-1", RBDPool: "rbd", SecretRef: &v1.SecretReference{Name: "s", Namespace: "n"}}}}}
	for _, tc := range []struct {
		minor      int
		set        string
		rbd        bool
		nodeExpand bool
	}{
		{26, "", false, false},
		{26, "CSIMigrationRBD=true", true, false},
		{28, "CSIMigrationRBD=true", true, true},
		{28, "CSIMigrationRBD=true,CSINodeExpandSecret=false", true, false},
		{31, "", true, true},
	} {
		fg, err := featuregate.ForVersion(tc.minor)
		if err != nil {
			t.Fatal(err)
		}
		if tc.set != "" {
			if err := fg.Set(tc.set); err != nil {
				t.Fatal(err)
			}
		}
		tr, err := translate.New(translate.WithFeatureGates(fg, tc.minor))
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.IsPVMigratable(rbdPV); got != tc.rbd {
			t.Errorf("1.%d %s: RBD migratable %v", tc.minor, tc.set, got)
			continue
		}
		if !tc.rbd {
			continue
		}
		out, err := tr.TranslateInTreePVToCSI(logger, rbdPV)
		if err != nil {
			t.Fatal(err)
		}
		if got := out.Spec.CSI.NodeExpandSecretRef != nil; got != tc.nodeExpand {
			t.Errorf("1.%d %s: node-expand ref %v", tc.minor, tc.set, got)
		}
	}
}

// goIdentifier matches a qualified Go identifier such as
// secrets.CephFSCSISecret; immutableEdit an edit of a PV's source.
var (
	goIdentifier  = regexp.MustCompile(`\b[a-z][a-z0-9]*\.[A-Z][A-Za-z0-9]+\b`)
	immutableEdit = regexp.MustCompile(`(set|correct|change|edit) (spec\.(rbd|cephfs|vsphereVolume)|the volume path)`)
)

// Every finding's remedy names what an administrator can do: no Go
// identifier, no edit of a PV's source (which the API server refuses).
func TestRemediesAreActionable(t *testing.T) {
	tr := mustNew(t)
	rapid.Check(t, func(t *rapid.T) {
		var pv *v1.PersistentVolume
		switch rapid.IntRange(0, 3).Draw(t, "plugin") {
		case 0:
			pv = gen.RBDPV(t)
		case 1:
			pv = gen.CephFSPV(t, rapid.Bool().Draw(t, "secretFile"))
		case 2:
			pv = gen.VSpherePV(t)
		default:
			pv = gen.HostilePV(t)
		}
		for _, f := range tr.CheckPV(pv) {
			if f.Remedy == "" {
				t.Fatalf("%s: no remedy", f.Code)
			}
			if m := goIdentifier.FindString(f.Remedy); m != "" {
				t.Fatalf("%s: remedy names Go identifier %q: %s", f.Code, m, f.Remedy)
			}
			if m := immutableEdit.FindString(f.Remedy); m != "" {
				t.Fatalf("%s: remedy asks for an edit the API server refuses (%q): %s", f.Code, m, f.Remedy)
			}
		}
	})
}

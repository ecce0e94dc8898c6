package vsphere_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storage "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/internal/testsupport/plugintest"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
)

var logger = klog.Background().V(100)

const path = "[vsanDatastore] kubevols/pvc-1.vmdk"

func pvWith(na *v1.VolumeNodeAffinity, labels map[string]string) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv", Labels: labels},
		Spec: v1.PersistentVolumeSpec{
			AccessModes:  []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			NodeAffinity: na,
			PersistentVolumeSource: v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{
				VolumePath: path, FSType: "ext4", StoragePolicyName: "gold", StoragePolicyID: "id-1",
			}},
		},
	}
}

func affinity(exprs ...v1.NodeSelectorRequirement) *v1.VolumeNodeAffinity {
	return &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: exprs}}}}
}

func in(key string, vals ...string) v1.NodeSelectorRequirement {
	return v1.NodeSelectorRequirement{Key: key, Operator: v1.NodeSelectorOpIn, Values: vals}
}

func TestForwardTopology(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     vsphere.Options
		na       *v1.VolumeNodeAffinity
		labels   map[string]string
		wantNA   *v1.VolumeNodeAffinity
		wantAnno string
	}{
		{"GA affinity", vsphere.Options{},
			affinity(in(v1.LabelTopologyZone, "z1"), in(v1.LabelTopologyRegion, "r1")), nil,
			affinity(in(vsphere.DefaultZoneKey, "z1"), in(vsphere.DefaultRegionKey, "r1")), "zone=affinity-ga,region=affinity-ga"},
		{"beta labels only", vsphere.Options{},
			nil, map[string]string{v1.LabelFailureDomainBetaZone: "z1", v1.LabelFailureDomainBetaRegion: "r1"},
			affinity(in(vsphere.DefaultZoneKey, "z1"), in(vsphere.DefaultRegionKey, "r1")), "zone=label-beta,region=label-beta,created=nodeAffinity"},
		{"categories", vsphere.Options{Topology: vsphere.TopologyForCategories("openshift-zone", "openshift-region")},
			affinity(in(v1.LabelFailureDomainBetaZone, "z1")), nil,
			affinity(in("topology.csi.vmware.com/openshift-zone", "z1")), "zone=affinity-beta,region="},
		{"no topology", vsphere.Options{}, nil, nil, nil, ""},
		// VMware's zones page: a volume on a datastore shared by two zones.
		{"multi-zone label", vsphere.Options{},
			nil, map[string]string{v1.LabelFailureDomainBetaZone: "zone-b__zone-a", v1.LabelFailureDomainBetaRegion: "region-1"},
			affinity(in(vsphere.DefaultZoneKey, "zone-a", "zone-b"), in(vsphere.DefaultRegionKey, "region-1")), "zone=label-beta,region=label-beta,created=nodeAffinity"},
		{"multi-region label", vsphere.Options{},
			nil, map[string]string{v1.LabelTopologyZone: "z1", v1.LabelTopologyRegion: "r1__r2"},
			affinity(in(vsphere.DefaultZoneKey, "z1"), in(vsphere.DefaultRegionKey, "r1", "r2")), "zone=label-ga,region=label-ga,created=nodeAffinity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pv := pvWith(tc.na, tc.labels)
			out, err := vsphere.New(tc.opts).TranslateInTreePVToCSI(logger, pv)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantNA, out.Spec.NodeAffinity); diff != "" {
				t.Errorf("node affinity (-want +got):\n%s", diff)
			}
			if got := out.Annotations[vsphere.AnnTopology]; got != tc.wantAnno {
				t.Errorf("topology annotation %q, want %q", got, tc.wantAnno)
			}
			if out.Spec.CSI.VolumeHandle != path || out.Spec.CSI.VolumeAttributes["storagepolicyname"] != "gold" || out.Annotations[vsphere.AnnStoragePolicyID] != "id-1" {
				t.Errorf("csi %+v annotations %v", out.Spec.CSI, out.Annotations)
			}
			back, err := vsphere.New(tc.opts).TranslateCSIPVToInTree(out)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(pv, back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// A path without ".vmdk" (kubernetes/examples' "[DatastoreName]
// volumes/myDisk") is translated as the in-tree plugin resolved it, and
// comes back as it was.
func TestVolumePathWithoutVMDK(t *testing.T) {
	p := vsphere.New(vsphere.Options{})
	pv := pvWith(nil, nil)
	pv.Spec.VsphereVolume.VolumePath = "[DatastoreName] volumes/myDisk"
	out, err := p.TranslateInTreePVToCSI(logger, pv)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.Spec.CSI.VolumeHandle, "[DatastoreName] volumes/myDisk.vmdk"; got != want {
		t.Errorf("handle %q, want %q", got, want)
	}
	if got := out.Annotations[vsphere.AnnVolumePath]; got != "[DatastoreName] volumes/myDisk" {
		t.Errorf("annotation %s = %q", vsphere.AnnVolumePath, got)
	}
	back, err := p.TranslateCSIPVToInTree(out)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pv, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	fs := p.CheckPV(pv)
	if len(fs) != 1 || fs[0].Code != vsphere.FindingNotVMDK || fs[0].Severity != plugin.SeverityWarning || !strings.Contains(fs[0].Message, "myDisk.vmdk") {
		t.Errorf("findings %+v", fs)
	}
	for _, f := range fs {
		if strings.Contains(f.Remedy, "volume path to") {
			t.Errorf("remedy asks for an edit of the immutable source: %q", f.Remedy)
		}
	}
	vol := &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[ds] volumes/d"}}}
	inline, err := p.TranslateInTreeInlineVolumeToCSI(logger, vol, "ns")
	if err != nil || inline.Spec.CSI.VolumeHandle != "[ds] volumes/d.vmdk" {
		t.Errorf("inline: %v %v", inline, err)
	}
}

// A datastore cluster path in a StorageClass is refused, naming the
// datastore to use instead.
func TestStorageClassDatastoreCluster(t *testing.T) {
	sc := &storage.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "sc"}, Provisioner: vsphere.PluginName,
		Parameters: map[string]string{"datastore": "DatastoreCluster/ds1", "diskformat": "thin"}}
	_, err := vsphere.New(vsphere.Options{}).TranslateInTreeStorageClassToCSI(logger, sc)
	var ie *plugin.InvalidError
	if !errors.As(err, &ie) || len(ie.Errs) != 1 || ie.Errs[0].Field != "parameters[datastore]" || !strings.Contains(ie.Errs[0].Detail, `"ds1"`) {
		t.Fatalf("got %v", err)
	}
	sc.Parameters["datastore"] = "ds1"
	if _, err := vsphere.New(vsphere.Options{}).TranslateInTreeStorageClassToCSI(logger, sc); err != nil {
		t.Fatal(err)
	}
}

func TestReverseVolumePath(t *testing.T) {
	p := vsphere.New(vsphere.Options{})
	csi := func(handle string, attrs map[string]string) *v1.PersistentVolume {
		return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: vsphere.DriverName, VolumeHandle: handle, VolumeAttributes: attrs}}}}
	}
	// From the attribute the driver returns.
	back, err := p.TranslateCSIPVToInTree(csi("9d5d0d4c-1111-2222-3333-444455556666", map[string]string{"initialvolumefilepath": path}))
	if err != nil || back.Spec.VsphereVolume.VolumePath != path {
		t.Fatalf("from attribute: %v, %+v", err, back)
	}
	// From a handle that is a path (upstream gives an empty path here).
	back, err = p.TranslateCSIPVToInTree(csi(path, nil))
	if err != nil || back.Spec.VsphereVolume.VolumePath != path {
		t.Fatalf("from handle: %v", err)
	}
	// Neither: a typed error, never an empty path.
	_, err = p.TranslateCSIPVToInTree(csi("9d5d0d4c-1111-2222-3333-444455556666", nil))
	var mi *plugin.MissingInformationError
	if !errors.As(err, &mi) || mi.Field != "spec.vsphereVolume.volumePath" {
		t.Fatalf("err = %v", err)
	}
}

// A CSI PV the driver created: reverse adds upstream's labels, and forward
// gives the CSI PV back with the handle csi-translation-lib computes for the
// stored in-tree PV (the volume path), the FCD ID kept in an annotation from
// which the next reverse translation takes it.
func TestReverseProvisioned(t *testing.T) {
	p := vsphere.New(vsphere.Options{})
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: v1.PersistentVolumeSpec{
		AccessModes:  []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		NodeAffinity: affinity(in(vsphere.DefaultZoneKey, "z1"), in(vsphere.DefaultRegionKey, "r1")),
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: vsphere.DriverName,
			VolumeHandle:        "9d5d0d4c-1111-2222-3333-444455556666",
			VolumeAttributes:    map[string]string{"initialvolumefilepath": path, "type": "vSphere CNS Block Volume"},
			NodeExpandSecretRef: &v1.SecretReference{Name: "s", Namespace: "ns"}}},
	}}
	back, err := p.TranslateCSIPVToInTree(pv)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{v1.LabelTopologyZone: "z1", v1.LabelTopologyRegion: "r1"}, back.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(affinity(in(v1.LabelTopologyZone, "z1"), in(v1.LabelTopologyRegion, "r1")), back.Spec.NodeAffinity); diff != "" {
		t.Errorf("affinity (-want +got):\n%s", diff)
	}
	again, err := p.TranslateInTreePVToCSI(logger, back)
	if err != nil {
		t.Fatal(err)
	}
	want := pv.Spec.CSI.DeepCopy()
	want.VolumeHandle = path
	if diff := cmp.Diff(want, again.Spec.CSI); diff != "" {
		t.Errorf("CSI source after the round trip (-want +got):\n%s", diff)
	}
	if got := again.Annotations[plugin.AnnOriginalVolumeHandle]; got != pv.Spec.CSI.VolumeHandle {
		t.Errorf("annotation %s = %q, want the FCD ID %q", plugin.AnnOriginalVolumeHandle, got, pv.Spec.CSI.VolumeHandle)
	}
	backAgain, err := p.TranslateCSIPVToInTree(again)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(back, backAgain); diff != "" {
		t.Errorf("the in-tree PV changes through forward and reverse (-first +second):\n%s", diff)
	}
}

func TestInlinePolicyNoPanic(t *testing.T) {
	vol := &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: path, StoragePolicyName: "gold"}}}
	pv, err := vsphere.New(vsphere.Options{}).TranslateInTreeInlineVolumeToCSI(logger, vol, "ns")
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.CSI.VolumeAttributes["storagepolicyname"] != "gold" {
		t.Errorf("attributes %v", pv.Spec.CSI.VolumeAttributes)
	}
}

func TestStorageClass(t *testing.T) {
	sc := &storage.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: "thin"},
		Parameters: map[string]string{"DiskFormat": "thin", "datastore": "vsanDatastore", "fstype": "xfs", "StoragePolicyName": "gold"},
		AllowedTopologies: []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{
			{Key: v1.LabelTopologyZone, Values: []string{"z1"}}, {Key: v1.LabelFailureDomainBetaRegion, Values: []string{"r1"}}, {Key: "rack", Values: []string{"a"}},
		}}},
	}
	got, err := vsphere.New(vsphere.Options{}).TranslateInTreeStorageClassToCSI(logger, sc)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"diskformat-migrationparam": "thin", "datastore-migrationparam": "vsanDatastore", "csi.storage.k8s.io/fstype": "xfs",
		"storagepolicyname": "gold", "csimigration": "true"}
	if diff := cmp.Diff(want, got.Parameters); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	wantTopo := []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{
		{Key: vsphere.DefaultZoneKey, Values: []string{"z1"}}, {Key: vsphere.DefaultRegionKey, Values: []string{"r1"}}, {Key: "rack", Values: []string{"a"}},
	}}}
	if diff := cmp.Diff(wantTopo, got.AllowedTopologies); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestStorageClassErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params map[string]string
		field  string
		detail string
	}{
		{"unknown", map[string]string{"color": "blue"}, "parameters[color]", ""},
		{"thick", map[string]string{"diskformat": "zeroedthick"}, "parameters[diskformat]", "storage policy"},
		{"vsan", map[string]string{"hostFailuresToTolerate": "1"}, "parameters[hostFailuresToTolerate]", "vSAN storage policy"},
		{"range", map[string]string{"diskstripes": "13"}, "parameters[diskstripes]", "from 1 to 12"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := vsphere.New(vsphere.Options{}).TranslateInTreeStorageClassToCSI(logger, &storage.StorageClass{Parameters: tc.params})
			var fe *field.Error
			if !errors.Is(err, plugin.ErrInvalid) || !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(err.Error(), tc.detail) {
				t.Errorf("err = %v", err)
			}
		})
	}
	// Passed through for a driver that accepts them.
	out, err := vsphere.New(vsphere.Options{AllowUnsupportedParameters: true}).TranslateInTreeStorageClassToCSI(logger,
		&storage.StorageClass{Parameters: map[string]string{"diskformat": "eagerzeroedthick", "iopslimit": "100"}})
	if err != nil || out.Parameters["diskformat-migrationparam"] != "eagerzeroedthick" || out.Parameters["iopslimit-migrationparam"] != "100" {
		t.Errorf("pass-through: %v %v", err, out)
	}
}

func TestLabelsConfig(t *testing.T) {
	got, err := vsphere.TopologyForCategories("openshift-zone", "openshift-region").LabelsConfig("rack")
	if err != nil || got != "[Labels]\ntopology-categories = \"openshift-zone,openshift-region,rack\"\n" {
		t.Errorf("%q, %v", got, err)
	}
	if _, err := (vsphere.Topology{}).LabelsConfig("a", "b", "c", "d"); err == nil {
		t.Error("6 categories accepted")
	}
	if _, err := vsphere.LegacyTopology().LabelsConfig(); err == nil {
		t.Error("legacy keys cannot be categories")
	}
}

func TestRoundTripProperty(t *testing.T) {
	plugintest.RoundTrip(t, vsphere.New(vsphere.Options{}), gen.VSpherePV)
}

func TestRoundTripCategoriesProperty(t *testing.T) {
	plugintest.RoundTrip(t, vsphere.New(vsphere.Options{Topology: vsphere.LegacyTopology()}), gen.VSpherePV)
}

func TestHostileProperty(t *testing.T) {
	plugintest.Hostile(t, vsphere.New(vsphere.Options{}))
}

// A GA and a beta zone key in one term would become duplicate keys, which
// Kubernetes rejects: they are merged (values intersected); a term that can
// never match is refused; duplicate terms are kept once.
func TestAllowedTopologiesMerge(t *testing.T) {
	p := vsphere.New(vsphere.Options{})
	req := func(k string, v ...string) v1.TopologySelectorLabelRequirement {
		return v1.TopologySelectorLabelRequirement{Key: k, Values: v}
	}
	sc := &storage.StorageClass{AllowedTopologies: []v1.TopologySelectorTerm{
		{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{req(v1.LabelTopologyZone, "a", "b"), req(v1.LabelFailureDomainBetaZone, "b", "c")}},
		{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{req(v1.LabelFailureDomainBetaZone, "b")}},
	}}
	out, err := p.TranslateInTreeStorageClassToCSI(logger, sc)
	if err != nil {
		t.Fatal(err)
	}
	want := []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{req(vsphere.DefaultZoneKey, "b")}}}
	if diff := cmp.Diff(want, out.AllowedTopologies); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	sc.AllowedTopologies[0].MatchLabelExpressions[1].Values = []string{"c"}
	if _, err := p.TranslateInTreeStorageClassToCSI(logger, sc); !errors.Is(err, plugin.ErrInvalid) || !strings.Contains(err.Error(), "never match") {
		t.Errorf("err = %v", err)
	}
}

// The vSphere CSI driver reads a multi-node access mode as a request for a
// file share: CheckPV blocks a VMDK PV that allows one.
func TestCheckPVAccessModes(t *testing.T) {
	for _, tc := range []struct {
		modes   []v1.PersistentVolumeAccessMode
		refused bool
	}{
		{nil, false},
		{[]v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, false},
		{[]v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}, false},
		{[]v1.PersistentVolumeAccessMode{v1.ReadWriteMany}, true},
		{[]v1.PersistentVolumeAccessMode{v1.ReadOnlyMany}, true},
		{[]v1.PersistentVolumeAccessMode{v1.ReadWriteOnce, v1.ReadWriteMany}, true},
	} {
		pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: v1.PersistentVolumeSpec{AccessModes: tc.modes,
			PersistentVolumeSource: v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[ds] kubevols/d.vmdk"}}}}
		var got []plugin.Finding
		for _, f := range vsphere.New(vsphere.Options{}).CheckPV(pv) {
			if f.Code == vsphere.FindingAccessModeRefused {
				got = append(got, f)
			}
		}
		if (len(got) == 1) != tc.refused || len(got) > 1 || tc.refused && got[0].Severity != plugin.SeverityBlocker {
			t.Errorf("%v: findings %+v, want refused %v", tc.modes, got, tc.refused)
		}
	}
}

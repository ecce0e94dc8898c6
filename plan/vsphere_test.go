package plan_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/vsphere/envcheck"
	"github.com/csimigrate/csimigrate/translate"
)

// fakeVCenter is a vCenter for the plan's own rules (vspheretest judges
// the plan against vcsim and the vSphere CSI driver).
type fakeVCenter struct {
	env        plan.VSphereEnvironment
	envErr     error
	disks      map[string]plan.VSphereDisk
	datastores []string
	policies   []string
	// asked records the UUIDs Environment was asked for.
	asked []string
}

func (f *fakeVCenter) Environment(uuids []string) (plan.VSphereEnvironment, error) {
	f.asked = uuids
	return f.env, f.envErr
}

func (f *fakeVCenter) Disk(path string) (plan.VSphereDisk, error) {
	if path == "[broken] x.vmdk" {
		return plan.VSphereDisk{}, errors.New("connection reset")
	}
	return f.disks[path], nil
}

func (f *fakeVCenter) Datastore(name string) (bool, error) {
	return slices.Contains(f.datastores, name), nil
}

func (f *fakeVCenter) StoragePolicy(name string, byID bool) (bool, error) {
	return slices.Contains(f.policies, name), nil
}

func vspherePV(name, path, policy string) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PersistentVolumeSpec{
		AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
		PersistentVolumeSource: v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: path, StoragePolicyName: policy}}}}
}

func goodEnv() plan.VSphereEnvironment {
	return plan.VSphereEnvironment{Version: "8.0.3", APIVersion: "8.0.3.0", Hosts: []envcheck.Host{{Name: "esx1", Version: "8.0.3"}},
		VMs: map[string]envcheck.VM{"uuid-1": {Name: "vm-1", HardwareVersion: "vmx-19"}}}
}

func node(name, providerID string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

func csiNode(name string, drivers ...string) *storagev1.CSINode {
	n := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, d := range drivers {
		n.Spec.Drivers = append(n.Spec.Drivers, storagev1.CSINodeDriver{Name: d, NodeID: name})
	}
	return n
}

func vspherePlan(t *testing.T, vc *fakeVCenter, mappings map[string]string, objs ...any) *plan.Plan {
	t.Helper()
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	p := withDrivers(plan.New(tr, logger, plan.Options{VCenter: vc, VSphereMappings: mappings}))
	for _, o := range objs {
		p.Add(o)
	}
	return p.Finish()
}

// Each in-tree vSphere volume is judged by what vCenter has of it: what
// the driver would fail on (no datastore, no disk, no policy of the name,
// a mapping to another volume) blocks; registration and mapping are said.
func TestPlanVCenterVolumes(t *testing.T) {
	vc := &fakeVCenter{env: goodEnv(), policies: []string{"gold"}, disks: map[string]plan.VSphereDisk{
		"[ds1] kubevols/ok.vmdk":         {Datastore: true, File: true},
		"[ds1] kubevols/registered.vmdk": {Datastore: true, File: true, FCD: "fcd-1", CNS: true},
		"[ds1] volumes/noext.vmdk":       {Datastore: true, File: true, FCD: "fcd-2"},
		"[ds1] kubevols/gone.vmdk":       {Datastore: true},
		"[ds1] kubevols/conflict.vmdk":   {Datastore: true, File: true, FCD: "fcd-3", CNS: true},
		"[ds1] kubevols/policy.vmdk":     {Datastore: true, File: true},
		"[ds1] kubevols/mapped.vmdk":     {Datastore: true, File: true, FCD: "fcd-4", CNS: true},
	}}
	mappings := map[string]string{"[ds1] kubevols/registered.vmdk": "fcd-1", "[ds1] kubevols/conflict.vmdk": "fcd-other", "[ds1] kubevols/mapped.vmdk": "fcd-4"}
	p := vspherePlan(t, vc, mappings, node("n1", "vsphere://UUID-1"), csiNode("n1", "csi.vsphere.vmware.com"),
		vspherePV("ok", "[ds1] kubevols/ok.vmdk", "gold"),
		vspherePV("registered", "[ds1] kubevols/registered.vmdk", ""),
		vspherePV("noext", "[ds1] volumes/noext", ""),
		vspherePV("gone", "[ds1] kubevols/gone.vmdk", ""),
		vspherePV("nods", "[ds9] kubevols/x.vmdk", ""),
		vspherePV("conflict", "[ds1] kubevols/conflict.vmdk", ""),
		vspherePV("policy", "[ds1] kubevols/policy.vmdk", "silver"),
		vspherePV("broken", "[broken] x.vmdk", ""),
		// Mapped already: the syncer does not look its policy up again.
		vspherePV("mapped", "[ds1] kubevols/mapped.vmdk", "silver"))
	type verdict struct {
		Migratable bool
		Codes      string
		Why        string
	}
	got := map[string]verdict{}
	for _, v := range p.Volumes {
		got[v.Name] = verdict{v.Migratable, strings.Join(codes(v), ","), strings.Join(v.FormWhy[1:], " | ")}
	}
	want := map[string]verdict{
		"ok":         {true, "", "vCenter: not yet a First Class Disk; the driver's syncer registers it (as a First Class Disk and CNS volume) and maps its path when the migrated PV appears | the driver has no migration mapping (CnsVSphereVolumeMigration) of the path yet"},
		"registered": {true, "", "vCenter: First Class Disk and CNS volume fcd-1 | mapped by the driver (CnsVSphereVolumeMigration fcd-1)"},
		"noext":      {true, "VSphereNotVMDK", "vCenter: First Class Disk fcd-2, not yet a CNS volume; the driver's syncer registers it when the migrated PV appears | the driver has no migration mapping (CnsVSphereVolumeMigration) of the path yet"},
		"gone":       {false, plan.FindingVSphereDiskMissing, ""},
		"nods":       {false, plan.FindingVSphereDatastoreMissing, ""},
		"conflict":   {false, plan.FindingVSphereMappingConflict, "vCenter: First Class Disk and CNS volume fcd-3"},
		"policy":     {false, plan.FindingVSpherePolicyMissing, ""},
		"broken":     {false, plan.FindingVCenterRead, ""},
		"mapped":     {true, "", "vCenter: First Class Disk and CNS volume fcd-4 | mapped by the driver (CnsVSphereVolumeMigration fcd-4)"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	if !p.Blocked {
		t.Error("plan not blocked")
	}
	if len(p.Hazards) != 0 {
		t.Errorf("hazards in a good environment: %+v", p.Hazards)
	}
	if diff := cmp.Diff([]string{"uuid-1"}, vc.asked); diff != "" {
		t.Errorf("UUIDs asked (-want +got):\n%s", diff)
	}
	if p.VCenter == nil || len(p.VCenter.Nodes) != 1 || p.VCenter.Nodes[0].VM != "vm-1" || p.VCenter.Nodes[0].HardwareVersion != "vmx-19" {
		t.Errorf("vCenter report: %+v", p.VCenter)
	}
}

// The environment: vCenter older than 7.0 U1, a node VM older than vmx-15,
// a node whose VM vCenter lacks and no node running the driver block; a
// node without a vSphere providerID warns.
func TestPlanVCenterEnvironment(t *testing.T) {
	env := goodEnv()
	env.Version, env.APIVersion = "7.0.0", "7.0.0.0"
	env.VMs["uuid-2"] = envcheck.VM{Name: "vm-2", HardwareVersion: "vmx-13"}
	vc := &fakeVCenter{env: env, disks: map[string]plan.VSphereDisk{"[ds1] a.vmdk": {Datastore: true, File: true}}}
	p := vspherePlan(t, vc, nil, node("n1", "vsphere://uuid-1"), node("n2", "vsphere://uuid-2"), node("n3", "vsphere://uuid-3"), node("n4", "aws:///i-1"),
		csiNode("n1", "other.csi"), vspherePV("a", "[ds1] a.vmdk", ""))
	var got []string
	for _, h := range p.Hazards {
		got = append(got, h.Code+" "+h.Object+" "+h.Field+" "+string(h.Severity))
	}
	// The object at fault is Object (the command's HAZARDS column), the
	// field within it Field.
	want := []string{
		"VCenterTooOldForMigration vCenter  Blocker",
		"VSphereNodeVM node/n3  Blocker",
		"VSphereNodeVM node/n4  Warning",
		"check_deprecated_hw_version vm/vm-2  Blocker",
		"check_deprecated_vcenter vcenter  Warning",
		"VSphereDriverMissing  CSINode Blocker",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hazards (-want +got):\n%s", diff)
	}
	for _, h := range p.Hazards {
		if h.Remedy == "" {
			t.Errorf("%s has no remedy", h.Code)
		}
	}
	if !p.Blocked {
		t.Error("plan not blocked")
	}
	// A failed read of the environment blocks.
	vc = &fakeVCenter{envErr: errors.New("503"), disks: vc.disks}
	p = vspherePlan(t, vc, nil, vspherePV("a", "[ds1] a.vmdk", ""))
	if len(p.Hazards) != 1 || p.Hazards[0].Code != plan.FindingVCenterRead || !p.Blocked {
		t.Errorf("hazards: %+v", p.Hazards)
	}
	// Without vSphere volumes or classes, vCenter is not asked.
	vc = &fakeVCenter{envErr: errors.New("must not be asked")}
	if p = vspherePlan(t, vc, nil, rbdPV("r", "admin", "s")); slices.ContainsFunc(p.Hazards, func(h plugin.Finding) bool { return h.Code == plan.FindingVCenterRead }) {
		t.Errorf("vCenter asked without vSphere objects: %+v", p.Hazards)
	}
}

// An in-tree vSphere class whose datastore or storage policy vCenter lacks
// is not migratable.
func TestPlanVCenterClasses(t *testing.T) {
	vc := &fakeVCenter{env: goodEnv(), datastores: []string{"ds1"}, policies: []string{"gold"}}
	class := func(name string, params map[string]string) *storagev1.StorageClass {
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "kubernetes.io/vsphere-volume", Parameters: params}
	}
	p := vspherePlan(t, vc, nil, class("good", map[string]string{"datastore": "ds1", "storagePolicyName": "gold"}),
		class("nods", map[string]string{"Datastore": "ds2"}), class("nopolicy", map[string]string{"storagepolicyname": "silver"}))
	got := map[string]bool{}
	for _, s := range p.StorageClasses {
		got[s.Name] = s.Migratable
		if !s.Migratable && !strings.Contains(s.Reason, "is not in vCenter") {
			t.Errorf("%s: %s", s.Name, s.Reason)
		}
	}
	if diff := cmp.Diff(map[string]bool{"good": true, "nods": false, "nopolicy": false}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

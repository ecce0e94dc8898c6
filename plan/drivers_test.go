package plan_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
	"github.com/csimigrate/csimigrate/translate"
)

const (
	rookRBD    = "rook-ceph.rbd.csi.ceph.com"
	rookCephFS = "rook-ceph.cephfs.csi.ceph.com"
)

func csiDriver(name string) *storagev1.CSIDriver {
	return &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func rbdClass(name string) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: plugin.RBDInTreePluginName,
		Parameters: map[string]string{"monitors": "10.0.0.1:6789", "adminId": "admin", "adminSecretName": "admin", "adminSecretNamespace": "ns", "pool": "rbd"}}
}

// driverPlan plans objs with the classes and PVs last, in the order a
// dump would give them (the CSIDrivers anywhere).
func driverPlan(t *testing.T, opts plan.Options, objs ...any) *plan.Plan {
	t.Helper()
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	p := plan.New(tr, logger, opts)
	for _, o := range objs {
		p.Add(o)
	}
	return p.Finish()
}

func hazardCodes(r *plan.Plan) []string {
	var out []string
	for _, h := range r.Hazards {
		out = append(out, h.Code)
	}
	return out
}

// The plan uses the driver the cluster has for each backend, under its
// name, and blocks a backend with none, with two and no choice, with a
// choice that is not installed, or an input without CSIDrivers.
func TestPlanDrivers(t *testing.T) {
	base := []any{secret("admin", "key", "AQBs3cr3t"), rbdClass("fast"), cephConfig(testMonitor)}
	type verdict struct {
		Driver, ClassTo string
		Migratable      bool
		Codes           []string
		Hazards         []string
		Gates           string
	}
	for _, tc := range []struct {
		name    string
		drivers []string
		chosen  map[string]string
		want    verdict
	}{
		{"upstream", []string{plugin.RBDDriverName, plugin.CephFSDriverName}, nil,
			verdict{Driver: plugin.RBDDriverName, ClassTo: plugin.RBDDriverName, Migratable: true, Gates: "CSIMigrationRBD"}},
		{"rook", []string{rookRBD, rookCephFS, "ebs.csi.aws.com"}, nil,
			verdict{Driver: rookRBD, ClassTo: rookRBD, Migratable: true, Gates: "routes only to " + plugin.RBDDriverName}},
		{"no Ceph CSI", []string{plugin.VSphereDriverName}, nil,
			verdict{Driver: plugin.RBDDriverName, ClassTo: plugin.RBDDriverName, Codes: []string{plan.FindingCSIDriverMissing}, Gates: "CSIMigrationRBD"}},
		{"two RBD drivers", []string{plugin.RBDDriverName, rookRBD}, nil,
			verdict{Driver: plugin.RBDDriverName, ClassTo: plugin.RBDDriverName, Codes: []string{plan.FindingCSIDriverAmbiguous}, Gates: "CSIMigrationRBD"}},
		{"two RBD drivers, one chosen", []string{plugin.RBDDriverName, rookRBD}, map[string]string{plugin.RBDInTreePluginName: rookRBD},
			verdict{Driver: rookRBD, ClassTo: rookRBD, Migratable: true, Gates: "routes only to"}},
		{"chosen, not installed", []string{plugin.RBDDriverName}, map[string]string{plugin.RBDInTreePluginName: rookRBD},
			verdict{Driver: rookRBD, ClassTo: rookRBD, Codes: []string{plan.FindingCSIDriverMissing}, Gates: "routes only to"}},
		{"no CSIDrivers", nil, nil,
			verdict{Driver: plugin.RBDDriverName, ClassTo: plugin.RBDDriverName, Codes: []string{plan.FindingCSIDriversNotChecked}, Hazards: []string{plan.FindingCSIDriversNotChecked}, Gates: "CSIMigrationRBD"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, driversLast := range []bool{false, true} {
				objs := slices.Clone(base)
				var drivers []any
				for _, d := range tc.drivers {
					drivers = append(drivers, csiDriver(d))
				}
				if driversLast {
					// Classes before the CSIDrivers: only the PVs come last.
					objs = append(objs, drivers...)
				} else {
					objs = append(drivers, objs...)
				}
				r := driverPlan(t, plan.Options{Drivers: tc.chosen, KubernetesMinor: 30}, append(objs, rbdPV("a", "admin", "admin"))...)
				got := verdict{Driver: r.Volumes[0].Driver, Migratable: r.Volumes[0].Migratable, Codes: codes(r.Volumes[0]), Hazards: hazardCodes(r)}
				if len(r.StorageClasses) == 1 {
					got.ClassTo = r.StorageClasses[0].To
					if r.StorageClasses[0].Migratable != tc.want.Migratable {
						t.Errorf("class migratable %v, want %v: %s", r.StorageClasses[0].Migratable, tc.want.Migratable, r.StorageClasses[0].Reason)
					}
				}
				if strings.Contains(strings.Join(r.FeatureGates, "\n"), tc.want.Gates) {
					got.Gates = tc.want.Gates
				} else {
					got.Gates = strings.Join(r.FeatureGates, "\n")
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("CSIDrivers last %v (-want +got):\n%s", driversLast, diff)
				}
				if r.Blocked == tc.want.Migratable {
					t.Errorf("blocked %v with a volume migratable %v", r.Blocked, tc.want.Migratable)
				}
			}
		})
	}
}

// The two drivers of a backend are both named where none was chosen.
func TestPlanDriversAmbiguousNamesBoth(t *testing.T) {
	r := driverPlan(t, plan.Options{}, csiDriver(plugin.RBDDriverName), csiDriver(rookRBD), cephConfig(testMonitor), secret("admin", "key", "x"), rbdPV("a", "admin", "admin"))
	f := r.Volumes[0].Findings[0]
	if f.Action != plugin.ActionChooseDriver || !strings.Contains(f.Message, plugin.RBDDriverName) || !strings.Contains(f.Message, rookRBD) {
		t.Errorf("finding %+v: want both drivers named and the choice as its action", f)
	}
}

// A volume whose pods run on a node without the driver's node plugin is
// blocked; with it, it is not; without CSINodes it is not judged.
func TestPlanNodePlugin(t *testing.T) {
	pv := rbdPV("a", "admin", "admin")
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "data"}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Spec: v1.PodSpec{NodeName: "n1", Volumes: []v1.Volume{{Name: "v",
		VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "a"}}
	for _, tc := range []struct {
		name  string
		nodes []any
		want  bool // blocked by the node plugin
	}{
		{"registered", []any{csiNode("n1", rookRBD), csiNode("n2")}, false},
		{"other name registered", []any{csiNode("n1", plugin.RBDDriverName), csiNode("n2", rookRBD)}, true},
		{"no CSINode of the node", []any{csiNode("n2", rookRBD)}, true},
		{"no CSINodes", nil, false},
	} {
		objs := append([]any{csiDriver(rookRBD), cephConfig(testMonitor), secret("admin", "key", "x"), pod, claim}, tc.nodes...)
		r := driverPlan(t, plan.Options{}, append(objs, pv)...)
		if got := slices.Contains(codes(r.Volumes[0]), plan.FindingNodePluginMissing); got != tc.want {
			t.Errorf("%s: node plugin missing %v, want %v (%v)", tc.name, got, tc.want, r.Volumes[0].Findings)
		}
		if tc.want && (r.Volumes[0].Migratable || !r.Blocked) {
			t.Errorf("%s: a volume whose node has no node plugin is migratable", tc.name)
		}
	}
}

// A volume blocked by several checks shows their findings in the
// checklist's order (rewrite.Checklist: the Secrets, the pods using it, the
// node plugins where they run) and the first one's reason.
func TestPlanFirstReasonShown(t *testing.T) {
	pv := rbdPV("a", "admin", "missing")
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "data", UID: "u1"}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Spec: v1.PodSpec{NodeName: "n1", Volumes: []v1.Volume{{Name: "v",
		VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "u1"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "a"}}
	r := driverPlan(t, plan.Options{}, csiDriver(rookRBD), cephConfig(testMonitor), secret("other", "key", "x"), pod, claim, csiNode("n1"), pv)
	v := r.Volumes[0]
	if diff := cmp.Diff([]string{plan.FindingSecretMissing, plan.FindingVolumeInUse, plan.FindingNodePluginMissing}, codes(v)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
	if v.Migratable || !r.Blocked || !strings.HasPrefix(v.Reason, "Secret ns/missing ") {
		t.Errorf("migratable %v, plan blocked %v, reason %q, want the Secret's", v.Migratable, r.Blocked, v.Reason)
	}
}

// vSphere without zones (the driver reports no topology keys, no PV has
// zone labels) is not blocked; a PV with zone labels is, where no node's
// driver reports the keys; an input without vSphere volumes gets no
// vSphere finding.
func TestPlanVSphereTopologyPerVolume(t *testing.T) {
	zoned := vspherePV("zoned", "[ds1] kubevols/zoned.vmdk", "")
	zoned.Labels = map[string]string{v1.LabelTopologyZone: "z1"}
	plain := vspherePV("plain", "[ds1] kubevols/plain.vmdk", "")
	noKeys := []any{csiDriver(plugin.VSphereDriverName), csiDriver(plugin.RBDDriverName), cephConfig(testMonitor), csiNode("n1", plugin.VSphereDriverName), csiNode("n2", plugin.VSphereDriverName)}
	withKeys := func(keys ...string) *storagev1.CSINode {
		n := csiNode("n3", plugin.VSphereDriverName)
		n.Spec.Drivers[0].TopologyKeys = keys
		return n
	}
	opts := plan.Options{VSphereKeys: []string{vsphere.DefaultZoneKey, vsphere.DefaultRegionKey}}
	for _, tc := range []struct {
		name     string
		objs     []any
		volume   *v1.PersistentVolume
		severity plugin.Severity // of the topology finding, "" for none
	}{
		{"no zones", noKeys, plain, ""},
		{"zoned, no node reports the key", noKeys, zoned, plugin.SeverityBlocker},
		{"zoned, one node reports it", append(slices.Clone(noKeys), withKeys(vsphere.DefaultZoneKey, vsphere.DefaultRegionKey)), zoned, plugin.SeverityWarning},
		{"no vSphere volume", noKeys, rbdPV("r", "admin", "admin"), ""},
	} {
		r := driverPlan(t, opts, append(append(slices.Clone(tc.objs), secret("admin", "key", "x")), tc.volume)...)
		var got plugin.Severity
		for _, f := range r.Volumes[0].Findings {
			if f.Code == vsphere.FindingTopologyKeyUnused {
				got = f.Severity
			}
		}
		if got != tc.severity {
			t.Errorf("%s: topology finding %q, want %q (%+v)", tc.name, got, tc.severity, r.Volumes[0].Findings)
		}
		for _, h := range r.Hazards {
			if strings.Contains(h.Code, "VSphere") || h.Code == vsphere.FindingTopologyKeyUnused {
				t.Errorf("%s: cluster-wide vSphere hazard %+v", tc.name, h)
			}
		}
		if tc.severity != plugin.SeverityBlocker && !r.Volumes[0].Migratable {
			t.Errorf("%s: not migratable: %s", tc.name, r.Volumes[0].Reason)
		}
	}
}

package plan_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/translate"
)

var logger = klog.NewKlogr().V(10)

func planner(t interface{ Fatal(...any) }) *plan.Planner {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	return withDrivers(plan.New(tr, logger, plan.Options{}))
}

// withDrivers gives p the CSIDrivers of a cluster that runs the three
// drivers under their upstream names.
func withDrivers(p *plan.Planner, names ...string) *plan.Planner {
	if len(names) == 0 {
		names = []string{plugin.RBDDriverName, plugin.CephFSDriverName, plugin.VSphereDriverName}
	}
	for _, n := range names {
		p.Add(&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	p.Add(cephConfig(testMonitor))
	return p
}

const testMonitor = "10.0.0.1:6789"

// cephConfig is the config map of Ceph CSI's manifests with the entries of
// these monitor lists (each comma-separated).
func cephConfig(monitors ...string) *v1.ConfigMap {
	var entries []ceph.ClusterEntry
	for _, m := range monitors {
		entries = append(entries, ceph.EntryFor(strings.Split(m, ",")))
	}
	b, _ := json.Marshal(entries)
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ceph-csi", Name: "ceph-csi-config"}, Data: map[string]string{"config.json": string(b)}}
}

func rbdPV(name, user, secret string) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PersistentVolumeSpec{
		AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
		PersistentVolumeSource: v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{"10.0.0.1:6789"},
			RBDImage: "kubernetes-dynamic-pvc-" + name, RBDPool: "rbd", RadosUser: user, SecretRef: &v1.SecretReference{Name: secret, Namespace: "ns"}}}}}
}

func secret(name string, kv ...string) *v1.Secret {
	s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: map[string][]byte{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.Data[kv[i]] = []byte(kv[i+1])
	}
	return s
}

func codes(v plan.VolumePlan) []string {
	var out []string
	for _, f := range v.Findings {
		out = append(out, f.Code)
	}
	return out
}

// The secret rule, in one pass with the PVs last and in two passes: a
// non-admin user's key-only Secret blocks the volume until it names the
// user; the Secret's values are never in the report.
func TestPlanSecrets(t *testing.T) {
	for _, twoPass := range []bool{false, true} {
		objs := []any{secret("kube", "key", "AQBs3cr3t"), secret("kube-fixed", "key", "AQBs3cr3t", "adminId", "kube"),
			rbdPV("a", "kube", "kube"), rbdPV("b", "kube", "kube-fixed"), rbdPV("c", "", "missing")}
		p := planner(t)
		if twoPass {
			p.SetPhase(plan.PhaseOthers)
			for _, o := range objs {
				p.Add(o)
			}
			p.SetPhase(plan.PhasePVs)
		}
		for _, o := range objs {
			p.Add(o)
		}
		r := p.Finish()
		if len(r.Volumes) != 3 || !r.Blocked {
			t.Fatalf("two passes %v: %+v", twoPass, r)
		}
		want := map[string][]string{"a": {plan.FindingSecretNotReady}, "b": nil, "c": {plan.FindingSecretMissing}}
		for _, v := range r.Volumes {
			if diff := cmp.Diff(want[v.Name], codes(v)); diff != "" || v.Migratable != (want[v.Name] == nil) {
				t.Errorf("two passes %v: %s (migratable %v) codes (-want +got):\n%s", twoPass, v.Name, v.Migratable, diff)
			}
		}
		i := slices.IndexFunc(r.Secrets, func(s plan.SecretPlan) bool { return s.Name == "kube" })
		if i < 0 || r.Secrets[i].Action != "add" || !slices.Equal(r.Secrets[i].Fields, []string{"adminId=kube"}) {
			t.Errorf("secrets %+v", r.Secrets)
		}
		if !p.Plugins()[plugin.RBDInTreePluginName] {
			t.Errorf("plugins %v", p.Plugins())
		}
		if diff := cmp.Diff(r, p.Finish()); diff != "" {
			t.Errorf("a second Finish differs:\n%s", diff)
		}
	}
}

// Over generated objects, valid and hostile, in any order: Add never panics
// or modifies what it is given, every in-tree PV gets one row, and a
// migratable volume has no blocking finding.
func TestPlanProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := planner(rt)
		var objs []any
		n := 0
		for range rapid.IntRange(0, 6).Draw(rt, "objects") {
			switch rapid.IntRange(0, 4).Draw(rt, "kind") {
			case 0:
				objs = append(objs, gen.RBDPV(rt))
				n++
			case 1:
				objs = append(objs, gen.CephFSPV(rt, true))
				n++
			case 2:
				pv := gen.HostilePV(rt)
				objs = append(objs, pv)
				if plugin.InTreeNameOfPV(pv) != "" {
					n++
				}
			case 3:
				objs = append(objs, gen.RBDStorageClass(rt))
			default:
				objs = append(objs, &v1.Secret{ObjectMeta: gen.Meta(rt), Data: map[string][]byte{
					rapid.SampledFrom([]string{"key", "adminId", "userID", "userKey"}).Draw(rt, "field"): []byte(gen.HostileString().Draw(rt, "value"))}})
			}
		}
		var before []any
		for _, o := range objs {
			switch o := o.(type) {
			case *v1.PersistentVolume:
				before = append(before, o.DeepCopy())
			case *storagev1.StorageClass:
				before = append(before, o.DeepCopy())
			case *v1.Secret:
				before = append(before, o.DeepCopy())
			}
			p.Add(o)
		}
		p.Add(nil)
		r := p.Finish()
		if len(r.Volumes) != n {
			rt.Fatalf("%d rows for %d in-tree PVs", len(r.Volumes), n)
		}
		for _, v := range r.Volumes {
			for _, f := range v.Findings {
				if v.Migratable && f.Severity == plugin.SeverityBlocker {
					rt.Fatalf("%s is migratable with a blocker %+v", v.Name, f)
				}
			}
			if !v.Migratable && (v.Reason == "" || !r.Blocked) {
				rt.Fatalf("%s is not migratable with reason %q, plan blocked %v", v.Name, v.Reason, r.Blocked)
			}
		}
		if diff := cmp.Diff(before, objs); diff != "" {
			rt.Fatalf("input modified:\n%s", diff)
		}
	})
}

// existingEntry is an entry of a cluster's own Ceph CSI volumes, with a
// field the plan does not read.
const existingEntry = `{"clusterID":"0b2f1c3e-fsid","monitors":["10.9.9.9:6789"],"readAffinity":{"enabled":true}}`

// Finish returns everything a program prints: the feature-gate steps of
// the plugins in use, the Ceph config's warnings, the Ceph CSI config map,
// and the VolumeInUse finding of a volume pods use.
func TestPlanWholeReport(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	p := withDrivers(plan.New(tr, logger, plan.Options{KubernetesMinor: 30, CephConfigWarnings: []string{"entry x: no monitors"}, CephCSINamespace: "storage"}))
	pv := rbdPV("a", "", "admin")
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "data"}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "v",
		VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "storage", Name: "ceph-csi-config"}, Data: map[string]string{"config.json": "[" + existingEntry + "]"}}
	for _, o := range []any{secret("admin", "key", "AQBs3cr3t"), pod, cm, pv} {
		p.Add(o)
	}
	r := p.Finish()
	if len(r.Volumes) != 1 || !slices.Contains(codes(r.Volumes[0]), plan.FindingVolumeInUse) {
		t.Errorf("volumes %+v: want a VolumeInUse finding", r.Volumes)
	}
	var want []string
	for _, pl := range featuregate.Plugins {
		if pl.InTreeName == plugin.RBDInTreePluginName {
			want = featuregate.UpgradeSteps(30, pl)
		}
	}
	if len(want) == 0 || !slices.Equal(r.FeatureGates, want) {
		t.Errorf("feature-gate steps %q, want %q", r.FeatureGates, want)
	}
	if !slices.ContainsFunc(r.Hazards, func(f plugin.Finding) bool {
		return f.Code == plan.FindingCephConfigEntry && f.Message == "entry x: no monitors"
	}) {
		t.Errorf("hazards %+v: want the config's warning", r.Hazards)
	}
	// The drivers' config map, of plain manifests, is merged into: its
	// entry stays as it is, fields the plan does not know included.
	if len(r.CephCSIConfig) != 1 || r.CephCSIConfig[0].ConfigMapMerged == nil {
		t.Fatalf("Ceph CSI config %+v: want the merged map", r.CephCSIConfig)
	}
	cc := r.CephCSIConfig[0]
	got := cc.ConfigMapMerged.Data["config.json"]
	if cc.Deployment != plan.DeploymentManifests || cc.Namespace != "storage" || cc.ConfigMap != "ceph-csi-config" || len(r.CephClusters) != 1 ||
		!strings.Contains(got, r.CephClusters[0].ClusterID) || !strings.HasPrefix(got, "["+existingEntry+",") {
		t.Errorf("config %+v for clusters %+v: want the entry of %s added after %s", cc, r.CephClusters, r.CephClusters[0].ClusterID, existingEntry)
	}
	if r.Volumes[0].Migratable || !slices.Contains(codes(r.Volumes[0]), plan.FindingCephClusterEntryMissing) {
		t.Errorf("volume %+v: want it blocked until the driver serves its entry", r.Volumes[0])
	}
}

// Ready means checked: with no Secrets in the input (a dump taken without
// them), a volume and a class whose Ceph CSI Secrets cannot be judged are
// not migratable, and the plan is blocked. The Ceph oracle found the plan
// calling them ready (seed 453923: every drawn secret missing).
func TestPlanSecretsNotGiven(t *testing.T) {
	p := planner(t)
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "kubernetes.io/rbd",
		Parameters: map[string]string{"monitors": "10.0.0.1:6789", "adminId": "tenant", "adminSecretName": "ceph-admin", "adminSecretNamespace": "ns", "pool": "rbd"}}
	pv := rbdPV("a", "", "ceph-a")
	pv.Spec.StorageClassName = "fast"
	p.Add(class)
	p.Add(pv)
	r := p.Finish()
	if !r.Blocked || len(r.Volumes) != 1 || r.Volumes[0].Migratable || !strings.Contains(r.Volumes[0].Reason, "not checked") {
		t.Errorf("volumes %+v, blocked %v: want the volume not migratable, its Secret not checked", r.Volumes, r.Blocked)
	}
	if len(r.StorageClasses) != 1 || r.StorageClasses[0].Migratable || !strings.Contains(r.StorageClasses[0].Reason, "not checked") {
		t.Errorf("classes %+v: want the class not migratable, its admin Secret not checked", r.StorageClasses)
	}
}

// A volume more than one PV names (an RBD image, a CephFS path, a vSphere
// disk) is not adopted, by the adoption's own rules: each PV's form is the
// migration handle (static for CephFS), with the rule's reason naming the
// other PV; a volume one PV names keeps the native form.
func TestPlanSharedVolumesNotAdopted(t *testing.T) {
	p := planner(t)
	p.SetPhase(plan.PhasePVs)
	const image = "kubernetes-dynamic-pvc-0b3c5a4e-6f1d-11ec-9f4b-0242ac110002"
	for _, name := range []string{"rbd-a", "rbd-b"} {
		pv := rbdPV(name, "", "ceph")
		pv.Spec.RBD.RBDImage = image
		p.Add(pv)
	}
	p.Add(rbdPV("rbd-alone", "", "ceph"))
	for _, name := range []string{"fs-a", "fs-b"} {
		p.Add(&v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PersistentVolumeSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}, PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: v1.PersistentVolumeSource{CephFS: &v1.CephFSPersistentVolumeSource{Monitors: []string{testMonitor},
				Path: "/volumes/csi/csi-vol-" + image[len("kubernetes-dynamic-pvc-"):], User: "admin", SecretRef: &v1.SecretReference{Namespace: "ns", Name: "ceph"}}}}})
	}
	for _, name := range []string{"vs-a", "vs-b"} {
		p.Add(&v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PersistentVolumeSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[ds] kubevols/shared.vmdk"}}}})
	}
	report := p.Finish()
	got := map[string]string{}
	for _, v := range report.Volumes {
		got[v.Name] = v.Form + " " + strings.Join(v.Features, ",") + " | " + strings.Join(v.FormWhy, " | ")
	}
	for name, want := range map[string][]string{
		"rbd-a":     {"migration-handle stage,expand,delete | ", "PVs rbd-b reference the same image"},
		"rbd-b":     {"migration-handle stage,expand,delete | ", "PVs rbd-a reference the same image"},
		"fs-a":      {"static stage | ", "PVs fs-b name the same path"},
		"fs-b":      {"static stage | ", "PVs fs-a name the same path"},
		"vs-a":      {"migration-handle publish,expand,delete | ", "PVs vs-b name the same disk"},
		"vs-b":      {"migration-handle publish,expand,delete | ", "PVs vs-a name the same disk"},
		"rbd-alone": {"native "},
	} {
		for _, w := range want {
			if !strings.Contains(got[name], w) {
				t.Errorf("%s: %q, want it to contain %q", name, got[name], w)
			}
		}
	}
	// What only the native form would serve is not said of the others.
	if strings.Contains(got["rbd-a"], "layering") || !strings.Contains(got["rbd-alone"], "layering") {
		t.Errorf("the layering note: shared %q, alone %q; want it only for the native form", got["rbd-a"], got["rbd-alone"])
	}
}

// A class's own notices (an RBD parameter without a Ceph CSI counterpart)
// are logged once, where the class is translated, not again for each PV
// of the class whose replacement reads its provisioner secret.
func TestPlanClassNoticeLoggedOnce(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	rec := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 10})
	p := withDrivers(plan.New(tr, rec, plan.Options{}))
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "kubernetes.io/rbd",
		Parameters: map[string]string{"monitors": testMonitor, "adminId": "tenant", "adminSecretName": "ceph-admin", "adminSecretNamespace": "ns", "pool": "rbd", "userSecretName": "ceph-user"}}
	p.Add(class)
	for _, name := range []string{"a", "b", "c"} {
		pv := rbdPV(name, "", "ceph-"+name)
		pv.Spec.StorageClassName = "fast"
		pv.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimDelete
		p.Add(pv)
	}
	p.Finish()
	n := 0
	for _, l := range lines {
		if strings.Contains(l, "userSecretName") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the class's dropped parameter is logged %d times for a class and its 3 PVs, want once:\n%s", n, strings.Join(lines, "\n"))
	}
}

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
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// An in-tree RBD class is blocked for each reason at once, with the codes
// rewrite -apply refuses it with: its admin secret missing and its cluster
// entry not served.
func TestPlanClassCodes(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	p := plan.New(tr, logger, plan.Options{})
	p.Add(&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: plugin.RBDDriverName}})
	p.Add(cephConfig("10.9.9.9:6789")) // another cluster's entry only
	p.Add(secret("other", "key", "AQBs3cr3t"))
	p.Add(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "rbd"}, Provisioner: plugin.RBDInTreePluginName,
		Parameters: map[string]string{"monitors": testMonitor, "adminSecretName": "ceph-admin", "adminSecretNamespace": "ns", "pool": "rbd"}})
	r := p.Finish()
	if len(r.StorageClasses) != 1 {
		t.Fatalf("classes %+v", r.StorageClasses)
	}
	sc := r.StorageClasses[0]
	want := []string{string(rewrite.CodeSecretMissing), string(rewrite.CodeCephEntryMissing)}
	if sc.Migratable || !r.Blocked {
		t.Errorf("class migratable %v, plan blocked %v: want a blocked class", sc.Migratable, r.Blocked)
	}
	if diff := cmp.Diff(want, sc.Codes); diff != "" {
		t.Errorf("codes (-want +got):\n%s", diff)
	}
	if !strings.Contains(sc.Reason, "ceph-admin") || !strings.Contains(sc.Reason, "also: ") {
		t.Errorf("reason %q: want both reasons", sc.Reason)
	}
	// The plan's codes are the refusals' own.
	if plan.FindingCephClusterEntryMissing != string(rewrite.CodeCephEntryMissing) || plan.FindingVolumeInUse != string(rewrite.CodeInUse) ||
		plan.FindingCSIDriverMissing != string(rewrite.CodeCSIDriverMissing) {
		t.Errorf("plan codes %s, %s, %s differ from the refusals'", plan.FindingCephClusterEntryMissing, plan.FindingVolumeInUse, plan.FindingCSIDriverMissing)
	}
}

// A volume in use blocks the plan wherever rewrite -apply refuses it:
// without -online; with it, past the release that removed the plugin, and
// for CephFS, which no kubelet migrates. Only with -online before the
// removal is it a warning (the writer checks each node). The remedy names
// the workload to scale down.
func TestPlanInUse(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		minor    int
		online   bool
		cephfs   bool
		vsphere  bool
		severity plugin.Severity
		says     string
	}{
		// vSphere's in-tree plugin went in 1.30, its translation did not:
		// kubelets still mount its PVs through the driver.
		{"vsphere online past the plugin's removal", 37, true, false, true, plugin.SeverityWarning, "rewritten online only where"},
		{"offline", 30, false, false, false, plugin.SeverityBlocker, "refuses a PV in use"},
		{"online before the removal", 30, true, false, false, plugin.SeverityWarning, "rewritten online only where"},
		{"online past the removal", 37, true, false, false, plugin.SeverityBlocker, "Kubernetes 1.37 has no in-tree kubernetes.io/rbd plugin"},
		{"offline past the removal", 37, false, false, false, plugin.SeverityBlocker, "cannot mount the volume until it is rewritten"},
		{"cephfs online", 30, true, true, false, plugin.SeverityBlocker, "no kubelet migrates kubernetes.io/cephfs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := withDrivers(plan.New(tr, logger, plan.Options{KubernetesMinor: tc.minor, Online: tc.online}))
			pv := rbdPV("a", "", "admin")
			if tc.cephfs {
				pv.Spec.RBD = nil
				pv.Spec.CephFS = &v1.CephFSPersistentVolumeSource{Monitors: []string{testMonitor}, Path: "/volumes/g/a", User: "admin", SecretRef: &v1.SecretReference{Name: "admin", Namespace: "ns"}}
			}
			if tc.vsphere {
				pv.Spec.RBD = nil
				pv.Spec.VsphereVolume = &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[ds] kubevols/a.vmdk", FSType: "ext4"}
			}
			pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "data", UID: "u1"}
			pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "u1"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "a"}}
			ctrl := true
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db-0", OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "db", Controller: &ctrl}}},
				Spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
			for _, o := range []any{secret("admin", "key", "AQBs3cr3t", "userID", "admin", "userKey", "AQBs3cr3t"), pvc, pod, pv} {
				p.Add(o)
			}
			r := p.Finish()
			i := slices.IndexFunc(r.Volumes[0].Findings, func(f plugin.Finding) bool { return f.Code == plan.FindingVolumeInUse })
			if i < 0 {
				t.Fatalf("findings %+v: want %s", r.Volumes[0].Findings, plan.FindingVolumeInUse)
			}
			f := r.Volumes[0].Findings[i]
			if f.Severity != tc.severity || !strings.Contains(f.Message, tc.says) {
				t.Errorf("%s %q: want %s, saying %q", f.Severity, f.Message, tc.severity, tc.says)
			}
			if blocked := tc.severity == plugin.SeverityBlocker; r.Volumes[0].Migratable == blocked && blocked {
				t.Errorf("migratable %v with a blocker", r.Volumes[0].Migratable)
			}
			if !strings.Contains(f.Remedy, "scale StatefulSet ns/db to zero") {
				t.Errorf("remedy %q: want the StatefulSet named", f.Remedy)
			}
		})
	}
}

// The writer's saved states name what an interrupted run left: a PV
// deleted and not created again blocks the plan, naming its claim (Lost)
// and saying to run the rewrite again; a PV the run is deleting is not
// "being deleted, nothing to migrate" but a run to resume.
func TestPlanInterruptedRuns(t *testing.T) {
	state := func(name, ann, of string) *v1.ConfigMap {
		return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "csimigrate"},
			Annotations: map[string]string{ann: of}}}
	}
	p := planner(t)
	now := metav1.Now()
	deleting := rbdPV("mid", "", "admin")
	deleting.DeletionTimestamp = &now
	deleting.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "mid", UID: "u2"}
	for _, o := range []any{
		secret("admin", "key", "AQBs3cr3t"),
		state("csimigrate-rewrite-gone", rewrite.AnnRunOf, "gone"),
		state("csimigrate-rewrite-mid", rewrite.AnnRunOf, "mid"),
		&v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "u1"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "gone"}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimLost}},
		&v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mid", UID: "u2"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "mid"}},
		deleting,
	} {
		p.Add(o)
	}
	r := p.Finish()
	got := map[string]plugin.Finding{}
	for _, f := range r.Hazards {
		if f.Code == plan.FindingInterruptedRun {
			got[f.Object] = f
		}
	}
	if f := got["pv/gone"]; f.Severity != plugin.SeverityBlocker || !strings.Contains(f.Message, "claim ns/data shows Lost") || !strings.Contains(f.Remedy, "run the rewrite again") {
		t.Errorf("pv/gone: %+v", f)
	}
	if f := got["pv/mid"]; f.Severity != plugin.SeverityWarning {
		t.Errorf("pv/mid: %+v", f)
	}
	if !r.Blocked {
		t.Error("the plan is not blocked by a PV that is gone")
	}
	for _, v := range r.Volumes {
		if v.Name == "mid" && slices.Contains(codes(v), string(rewrite.CodeBeingDeleted)) {
			t.Errorf("pv/mid, which a saved run is deleting, is refused as being deleted: %+v", v.Findings)
		}
	}
}

// A pod's generic ephemeral volume uses the claim Kubernetes names
// <pod>-<volume>: an in-tree PV bound to it is in use while the pod runs.
func TestPlanInUseByEphemeralVolume(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	p := withDrivers(plan.New(tr, logger, plan.Options{KubernetesMinor: 30}))
	pv := rbdPV("a", "", "admin")
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "web-0-scratch", UID: "u1"}
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0-scratch", UID: "u1"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "a"}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0"},
		Spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}}}}}
	for _, o := range []any{secret("admin", "key", "AQBs3cr3t", "userID", "admin", "userKey", "AQBs3cr3t"), pvc, pod, pv} {
		p.Add(o)
	}
	r := p.Finish()
	if !slices.ContainsFunc(r.Volumes[0].Findings, func(f plugin.Finding) bool { return f.Code == plan.FindingVolumeInUse }) || r.Volumes[0].Migratable {
		t.Errorf("findings %+v, migratable %v: want %s, blocked", r.Volumes[0].Findings, r.Volumes[0].Migratable, plan.FindingVolumeInUse)
	}
}

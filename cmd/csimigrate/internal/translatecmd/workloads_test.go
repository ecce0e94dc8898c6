package translatecmd

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/csimigrate/csimigrate/rewrite"

	v1 "k8s.io/api/core/v1"
)

// The name of the PV and claim that replace an inline volume is a valid
// name for both (a DNS-1123 subdomain of at most 63 characters, so that it
// is also a valid label where one is needed), the same for the same
// workload and volume, and readable when the names allow it.
func FuzzInlineClaimName(f *testing.F) {
	f.Add("Deployment", "shop", "web", "test-volume")
	f.Add("Pod", "default", "rbd", "rbdpd")
	f.Add("StatefulSet", "ns", strings.Repeat("a", 250), "data")
	f.Add("Pod", "ns", "UPPER_case.name", "vol.1")
	f.Add("Job", "ns", "", "")
	f.Add("CronJob", "ns", "---", "äöü")
	f.Fuzz(func(t *testing.T, kind, ns, name, vol string) {
		w := &rewrite.Workload{Kind: kind, Namespace: ns, Name: name}
		got := rewrite.InlineClaimName(w, vol)
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 || len(got) > 63 {
			t.Fatalf("inlineClaimName(%q, %q) = %q: %v", name, vol, got, errs)
		}
		if again := rewrite.InlineClaimName(w, vol); again != got {
			t.Fatalf("not deterministic: %q, then %q", got, again)
		}
		plain := strings.ToLower(name + "-" + vol)
		if len(validation.IsDNS1123Subdomain(plain)) == 0 && len(plain) <= 63 && got != plain {
			t.Fatalf("a valid name %q was changed to %q", plain, got)
		}
		// The PV form of any inline source is a PV the command can print.
		for _, src := range []v1.VolumeSource{
			{RBD: &v1.RBDVolumeSource{CephMonitors: []string{vol}, RBDImage: name, SecretRef: &v1.LocalObjectReference{Name: vol}}},
			{CephFS: &v1.CephFSVolumeSource{Monitors: []string{vol}, Path: name}},
			{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: name}},
		} {
			pv := rewrite.InlinePV(&v1.Volume{Name: vol, VolumeSource: src}, ns, got, resource.MustParse("1Gi"))
			if pv == nil || pv.Name != got || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Namespace != ns || len(pv.Spec.AccessModes) != 1 {
				t.Fatalf("inlinePV: %+v", pv)
			}
			if c := rewrite.InlineClaim(pv, ns); c.Spec.VolumeName != got || c.Namespace != ns {
				t.Fatalf("inlineClaim: %+v", c)
			}
		}
	})
}

// A workload's copy with claims, for every kind (listed from a cluster,
// without TypeMeta): its apiVersion and kind set, the server's metadata and
// the status cleared, the volume replaced by the claim, the original left
// as it was.
func TestWithClaimsEveryKind(t *testing.T) {
	meta := metav1.ObjectMeta{Namespace: "ns", Name: "w", UID: "u1", ResourceVersion: "7", Generation: 3}
	tmpl := v1.PodTemplateSpec{Spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{RBD: &v1.RBDVolumeSource{RBDImage: "img", ReadOnly: true}}}}}}
	for _, tc := range []struct {
		obj        runtime.Object
		apiVersion string
	}{
		{&v1.Pod{ObjectMeta: meta, Spec: tmpl.Spec, Status: v1.PodStatus{Phase: v1.PodRunning}}, "v1"},
		{&v1.ReplicationController{ObjectMeta: meta, Spec: v1.ReplicationControllerSpec{Template: &tmpl}, Status: v1.ReplicationControllerStatus{Replicas: 1}}, "v1"},
		{&appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Template: tmpl}, Status: appsv1.DeploymentStatus{Replicas: 1}}, "apps/v1"},
		{&appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Template: tmpl}, Status: appsv1.StatefulSetStatus{Replicas: 1}}, "apps/v1"},
		{&appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Template: tmpl}, Status: appsv1.DaemonSetStatus{NumberReady: 1}}, "apps/v1"},
		{&appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Template: tmpl}, Status: appsv1.ReplicaSetStatus{Replicas: 1}}, "apps/v1"},
		{&batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Template: tmpl}, Status: batchv1.JobStatus{Active: 1}}, "batch/v1"},
		{&batchv1.CronJob{ObjectMeta: meta, Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}},
			Status: batchv1.CronJobStatus{Active: []v1.ObjectReference{{Name: "j"}}}}, "batch/v1"},
	} {
		before := tc.obj.DeepCopyObject()
		w, ok := rewrite.WorkloadOf(tc.obj)
		if !ok {
			t.Fatalf("%T is not a workload", tc.obj)
		}
		got := withClaims(w, map[int]string{0: "w-data"}).(runtime.Object)
		nw, _ := rewrite.WorkloadOf(got)
		if gvk := got.GetObjectKind().GroupVersionKind(); gvk.GroupVersion().String() != tc.apiVersion || gvk.Kind != w.Kind {
			t.Errorf("%s: apiVersion %q kind %q, want %q %q", w.Kind, gvk.GroupVersion(), gvk.Kind, tc.apiVersion, w.Kind)
		}
		if m := nw.Meta; m.UID != "" || m.ResourceVersion != "" || m.Generation != 0 || m.Name != "w" {
			t.Errorf("%s: metadata %+v", w.Kind, m)
		}
		if status := reflect.ValueOf(got).Elem().FieldByName("Status"); !status.IsZero() {
			t.Errorf("%s: status %+v kept", w.Kind, status.Interface())
		}
		want := v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "w-data", ReadOnly: true}}
		if diff := cmp.Diff(want, nw.Spec.Volumes[0].VolumeSource); diff != "" {
			t.Errorf("%s: volume (-want +got):\n%s", w.Kind, diff)
		}
		if diff := cmp.Diff(before, tc.obj); diff != "" {
			t.Errorf("%s: original modified:\n%s", w.Kind, diff)
		}
	}
}

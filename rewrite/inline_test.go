package rewrite_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

func TestWorkloadOf(t *testing.T) {
	owner := []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-1", Controller: func() *bool { b := true; return &b }()}}
	meta := metav1.ObjectMeta{Namespace: "ns", Name: "w", OwnerReferences: owner}
	for obj, kind := range map[any]string{
		&v1.Pod{ObjectMeta: meta}:             "Pod",
		&appsv1.Deployment{ObjectMeta: meta}:  "Deployment",
		&appsv1.StatefulSet{ObjectMeta: meta}: "StatefulSet",
		&appsv1.DaemonSet{ObjectMeta: meta}:   "DaemonSet",
		&appsv1.ReplicaSet{ObjectMeta: meta}:  "ReplicaSet",
		&batchv1.Job{ObjectMeta: meta}:        "Job",
		&batchv1.CronJob{ObjectMeta: meta}:    "CronJob",
		&v1.ReplicationController{ObjectMeta: meta, Spec: v1.ReplicationControllerSpec{Template: &v1.PodTemplateSpec{}}}: "ReplicationController",
	} {
		w, ok := rewrite.WorkloadOf(obj)
		if !ok || w.Kind != kind || w.ID() != kind+" ns/w" || w.Key() != kind+"/ns/w" || w.Owner != "ReplicaSet/web-1" || w.Spec == nil {
			t.Errorf("%s: %+v %v", kind, w, ok)
		}
	}
	for _, obj := range []any{nil, &v1.ReplicationController{}, &v1.Secret{}, 3} {
		if w, ok := rewrite.WorkloadOf(obj); ok || w != nil {
			t.Errorf("%T: a workload %+v", obj, w)
		}
	}
}

// Over generated inline volumes: the PV form is named validly, pre-bound to
// its claim, and its making modifies nothing it is given.
func TestInlineFormProperty(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		vol := rapid.OneOf(rapid.Custom(gen.RBDInline), rapid.Custom(gen.VSphereInline)).Draw(rt, "volume")
		w := &rewrite.Workload{Kind: "Deployment", Namespace: gen.DNSLabel().Draw(rt, "ns"), Name: gen.HostileString().Draw(rt, "name")}
		before, wBefore := vol.DeepCopy(), *w
		name := rewrite.InlineClaimName(w, vol.Name)
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			rt.Fatalf("name %q: %v", name, errs)
		}
		f := rewrite.NewInlineForm(tr, logger, w, vol, name, rewrite.DefaultInlineCapacity, func(*rewrite.Workload, plugin.Finding) string { return "r" })
		if f.InTree == nil || f.InTree.Spec.ClaimRef == nil || f.InTree.Spec.ClaimRef.Name != name || f.InTree.Spec.ClaimRef.Namespace != w.Namespace {
			rt.Fatalf("form %+v", f.InTree)
		}
		for _, b := range f.Blockers {
			if b.Remedy != "r" {
				rt.Fatalf("blocker without the workload's remedy: %+v", b)
			}
		}
		if c := rewrite.InlineClaim(f.InTree, w.Namespace); c.Spec.VolumeName != name {
			rt.Fatalf("claim %+v", c)
		}
		if diff := cmp.Diff(before, vol); diff != "" {
			rt.Fatalf("volume modified:\n%s", diff)
		}
		if w.Kind != wBefore.Kind || w.Namespace != wBefore.Namespace || w.Name != wBefore.Name {
			rt.Fatal("workload modified")
		}
	})
	if f := rewrite.NewInlineForm(nil, logger, nil, nil, "", rewrite.DefaultInlineCapacity, nil); f.InTree != nil || rewrite.InlinePV(nil, "", "", rewrite.DefaultInlineCapacity) != nil {
		t.Error("nil input")
	}
}

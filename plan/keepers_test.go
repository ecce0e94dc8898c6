package plan_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// TestPlanKeptObjects: a class a Helm release keeps and a PV Argo CD keeps
// block the plan, which names the keeper and gives each object as its
// source should hold it; once the administrator says the sources changed
// (the option, or the annotation) they are ready, with a warning.
func TestPlanKeptObjects(t *testing.T) {
	build := func(changed rewrite.ChangedSources, annotate bool) *plan.Plan {
		tr, err := translate.New()
		if err != nil {
			t.Fatal(err)
		}
		p := withDrivers(plan.New(tr, logger, plan.Options{SourceChanged: changed}))
		sc := rbdClass("fast")
		sc.Labels = map[string]string{"app.kubernetes.io/managed-by": "Helm"}
		sc.Annotations = map[string]string{"meta.helm.sh/release-name": "storage", "meta.helm.sh/release-namespace": "infra"}
		pv := rbdPV("data", "admin", "admin")
		pv.Annotations = map[string]string{"argocd.argoproj.io/tracking-id": "db:/PersistentVolume:/data"}
		pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "c", UID: "u1"}
		if annotate {
			pv.Annotations[rewrite.AnnSourceChanged] = "true"
		}
		pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "u1"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "data"}}
		for _, o := range []any{secret("admin", "key", "AQBs3cr3t"), sc, pvc, pv} {
			p.Add(o)
		}
		return p.Finish()
	}
	kept := build(nil, false)
	if !kept.Blocked || len(kept.Volumes) != 1 || len(kept.StorageClasses) != 1 {
		t.Fatalf("plan %+v", kept)
	}
	v, c := kept.Volumes[0], kept.StorageClasses[0]
	if v.Migratable || len(v.KeptBy) != 1 || v.KeptBy[0].String() != "Argo CD Application db" || v.Source == nil || v.Source.Spec.CSI == nil {
		t.Errorf("volume %+v", v)
	}
	if f := finding(v, plan.FindingKeptByReconciler); f == nil || f.Severity != plugin.SeverityBlocker || f.Action != plugin.ActionChangeSource {
		t.Errorf("volume's finding %+v", f)
	}
	if v.Source != nil && (v.Source.Annotations["argocd.argoproj.io/tracking-id"] != "" || v.Source.UID != "" || v.Source.Spec.ClaimRef.UID != "" || v.Source.Spec.CSI.Driver != plugin.RBDDriverName) {
		t.Errorf("the PV's source form %+v", v.Source)
	}
	if c.Migratable || c.Kept == nil || c.Kept.Severity != plugin.SeverityBlocker || c.Source == nil || c.Source.Provisioner != plugin.RBDDriverName || c.Source.Annotations["meta.helm.sh/release-name"] != "" {
		t.Errorf("class %+v", c)
	}

	for name, p := range map[string]*plan.Plan{
		"option":     build(rewrite.ChangedSources{{Kind: "PersistentVolume", Name: "data"}, {Kind: "StorageClass", Name: "fast"}}, false),
		"annotation": build(rewrite.ChangedSources{{Kind: "StorageClass", Name: "fast"}}, true),
	} {
		v, c := p.Volumes[0], p.StorageClasses[0]
		if p.Blocked || !v.Migratable || !c.Migratable {
			t.Errorf("%s: blocked: volume %+v class %+v", name, v, c)
		}
		if f := finding(v, plan.FindingKeptByReconciler); f == nil || f.Severity != plugin.SeverityWarning || v.Source == nil {
			t.Errorf("%s: volume's finding %+v", name, f)
		}
		if c.Kept == nil || c.Kept.Severity != plugin.SeverityWarning || c.Source == nil {
			t.Errorf("%s: class %+v", name, c)
		}
	}
}

func finding(v plan.VolumePlan, code string) *plugin.Finding {
	for i := range v.Findings {
		if v.Findings[i].Code == code {
			return &v.Findings[i]
		}
	}
	return nil
}

// A Secret to complete that Helm keeps: the plan says where the field
// belongs.
func TestPlanKeptSecret(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	p := withDrivers(plan.New(tr, logger, plan.Options{}))
	s := secret("kube", "key", "AQBs3cr3t")
	s.Annotations = map[string]string{"meta.helm.sh/release-name": "apps", "meta.helm.sh/release-namespace": "ns"}
	for _, o := range []any{s, rbdPV("data", "kube", "kube")} {
		p.Add(o)
	}
	got := p.Finish()
	if len(got.Secrets) != 1 || len(got.Secrets[0].KeptBy) != 1 || !strings.Contains(got.Secrets[0].Reason, "kept by Helm release ns/apps: change it in the values or templates of the chart of Helm release ns/apps") {
		t.Errorf("secrets %+v", got.Secrets)
	}
}

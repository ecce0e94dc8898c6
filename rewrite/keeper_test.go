package rewrite_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
)

func TestKeepersOf(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name string
		meta metav1.ObjectMeta
		want []string // Keeper.String() of each
		// reconciles is whether KeptRefusal refuses without a signal.
		reconciles bool
	}{
		{"nothing", metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}, nil, false},
		{"helm install", metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/instance": "ceph"},
			Annotations: map[string]string{"meta.helm.sh/release-name": "ceph", "meta.helm.sh/release-namespace": "storage"}},
			[]string{"Helm release storage/ceph"}, true},
		{"a chart rendered, applied by another tool", metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"}}, []string{"Helm"}, true},
		{"flux kustomization", metav1.ObjectMeta{Labels: map[string]string{"kustomize.toolkit.fluxcd.io/name": "storage", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}},
			[]string{"Flux Kustomization flux-system/storage"}, true},
		{"flux helmrelease", metav1.ObjectMeta{Labels: map[string]string{"helm.toolkit.fluxcd.io/name": "ceph", "helm.toolkit.fluxcd.io/namespace": "flux-system", "app.kubernetes.io/managed-by": "Helm"},
			Annotations: map[string]string{"meta.helm.sh/release-name": "ceph", "meta.helm.sh/release-namespace": "storage"}},
			[]string{"Helm release storage/ceph", "Flux HelmRelease flux-system/ceph"}, true},
		{"argo annotation tracking", metav1.ObjectMeta{Annotations: map[string]string{"argocd.argoproj.io/tracking-id": "storage:storage.k8s.io/StorageClass:/fast"}},
			[]string{"Argo CD Application storage"}, true},
		{"argo label tracking", metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/instance": "storage"}}, []string{"Argo CD Application storage"}, true},
		{"addon manager reconciles", metav1.ObjectMeta{Labels: map[string]string{"addonmanager.kubernetes.io/mode": "Reconcile"}}, []string{"addon manager"}, true},
		{"addon manager creates only", metav1.ObjectMeta{Labels: map[string]string{"addonmanager.kubernetes.io/mode": "EnsureExists"}}, []string{"addon manager"}, false},
		{"operator", metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephBlockPool", Name: "replicapool", Controller: &yes}}},
			[]string{"its owner CephBlockPool replicapool"}, true},
		{"owner for garbage collection only", metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "ConfigMap", Name: "x"}}}, nil, false},
		{"managed fields only", metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager"}, {Manager: "kustomize-controller", Operation: metav1.ManagedFieldsOperationApply}}},
			[]string{"Flux"}, true},
		{"managed fields beside labels", metav1.ObjectMeta{Annotations: map[string]string{"argocd.argoproj.io/tracking-id": "app:/PersistentVolume:/pv"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "argocd-controller"}}}, []string{"Argo CD Application app"}, true},
	} {
		pv := &v1.PersistentVolume{ObjectMeta: tc.meta}
		pv.Name = "pv"
		orig := pv.DeepCopy()
		var got []string
		for _, k := range rewrite.KeepersOf(pv) {
			got = append(got, k.String())
			if len(k.Evidence) == 0 || k.Source == "" {
				t.Errorf("%s: keeper %+v without evidence or source", tc.name, k)
			}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: keepers (-want +got):\n%s", tc.name, diff)
		}
		err := rewrite.KeptRefusal("PersistentVolume", pv, false)
		if (err != nil) != tc.reconciles {
			t.Errorf("%s: refusal %v, want one: %v", tc.name, err, tc.reconciles)
		}
		var r *rewrite.Refusal
		if err != nil && (!errors.As(err, &r) || r.Code != rewrite.CodeKeptByReconciler || r.Action != plugin.ActionChangeSource || r.ActsOn != "pv/pv") {
			t.Errorf("%s: refusal %#v", tc.name, err)
		}
		if err := rewrite.KeptRefusal("PersistentVolume", pv, true); err != nil {
			t.Errorf("%s: refused though the source changed: %v", tc.name, err)
		}
		marked := pv.DeepCopy()
		metav1.SetMetaDataAnnotation(&marked.ObjectMeta, rewrite.AnnSourceChanged, "true")
		if err := rewrite.KeptRefusal("PersistentVolume", marked, false); err != nil {
			t.Errorf("%s: refused though annotated: %v", tc.name, err)
		}
		if diff := cmp.Diff(orig, pv); diff != "" {
			t.Errorf("%s: input modified:\n%s", tc.name, diff)
		}
	}
}

func TestKeptRefusalWords(t *testing.T) {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "data",
		Annotations: map[string]string{"argocd.argoproj.io/tracking-id": "storage:/PersistentVolume:/data", "argocd.argoproj.io/sync-options": "Prune=false,Replace=true"}}}
	err := rewrite.KeptRefusal("PersistentVolume", pv, false)
	for _, want := range []string{"Argo CD Application storage", "annotation argocd.argoproj.io/tracking-id", "Replace=true", "deletes the rewritten PV",
		"put the new form in the Git manifest or chart values of Argo CD Application storage", rewrite.AnnSourceChanged + "=true on PersistentVolume data"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %v: want %q in it", err, want)
		}
	}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast", Labels: map[string]string{"addonmanager.kubernetes.io/mode": "Reconcile"}}}
	err = rewrite.KeptRefusal("StorageClass", sc, false)
	if err == nil || strings.Contains(err.Error(), "immutable") || strings.Contains(err.Error(), "a PV's source") || !strings.Contains(err.Error(), "the addon's manifest") {
		t.Errorf("class refusal %v", err)
	}
}

func TestSourceForms(t *testing.T) {
	now := metav1.Now()
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "data", UID: "u", ResourceVersion: "7", CreationTimestamp: now, Finalizers: []string{rewrite.PVProtection},
			Labels: map[string]string{"app": "db", "kustomize.toolkit.fluxcd.io/name": "s"},
			Annotations: map[string]string{"meta.helm.sh/release-name": "r", "pv.kubernetes.io/bound-by-controller": "yes", rewrite.AnnSourceChanged: "true",
				rewrite.AnnReclaimPolicy: "Delete", "team": "storage", v1.LastAppliedConfigAnnotation: "{}"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "helm"}}},
		Spec: v1.PersistentVolumeSpec{ClaimRef: &v1.ObjectReference{Namespace: "ns", Name: "c", UID: "cu", ResourceVersion: "3"},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound},
	}
	orig := pv.DeepCopy()
	want := &v1.PersistentVolume{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
		ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"app": "db"}, Annotations: map[string]string{"team": "storage"}},
		Spec: v1.PersistentVolumeSpec{ClaimRef: &v1.ObjectReference{Namespace: "ns", Name: "c"},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}}}
	if diff := cmp.Diff(want, rewrite.SourcePV(pv)); diff != "" {
		t.Errorf("SourcePV (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(orig, pv); diff != "" {
		t.Errorf("input modified:\n%s", diff)
	}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast", UID: "u", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true", rewrite.AnnMigratedFrom: plugin.RBDInTreePluginName}},
		Provisioner: plugin.RBDDriverName, Parameters: map[string]string{"pool": "p"}}
	got := rewrite.SourceClass(sc)
	if got.UID != "" || got.Annotations[rewrite.AnnMigratedFrom] != "" || got.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" || got.Kind != "StorageClass" || got.Parameters["pool"] != "p" {
		t.Errorf("SourceClass: %+v", got)
	}
	if rewrite.SourcePV(nil) != nil || rewrite.SourceClass(nil) != nil || rewrite.KeepersOf(nil) != nil || rewrite.KeptRefusal("PersistentVolume", nil, false) != nil {
		t.Error("nil input gave something")
	}
}

// TestKeepersProperty: on any labels, annotations, owners and managers,
// KeepersOf and KeptRefusal never panic or modify their input, and
// KeptRefusal refuses exactly when a keeper reconciles and no signal says
// the source changed.
func TestKeepersProperty(t *testing.T) {
	keys := []string{"app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "meta.helm.sh/release-name", "meta.helm.sh/release-namespace",
		"kustomize.toolkit.fluxcd.io/name", "helm.toolkit.fluxcd.io/name", "argocd.argoproj.io/tracking-id", "argocd.argoproj.io/sync-options",
		"addonmanager.kubernetes.io/mode", rewrite.AnnSourceChanged, "other"}
	values := []string{"", "Helm", "Reconcile", "EnsureExists", "true", "a:b/c", "Replace=true", "x"}
	rapid.Check(t, func(t *rapid.T) {
		m := func(label string) map[string]string {
			return rapid.MapOf(rapid.SampledFrom(keys), rapid.SampledFrom(values)).Draw(t, label)
		}
		pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", Labels: m("labels"), Annotations: m("annotations")}}
		for _, mgr := range rapid.SliceOf(rapid.SampledFrom([]string{"helm", "kustomize-controller", "helm-controller", "argocd-controller", "kubectl", ""})).Draw(t, "managers") {
			pv.ManagedFields = append(pv.ManagedFields, metav1.ManagedFieldsEntry{Manager: mgr})
		}
		if rapid.Bool().Draw(t, "owner") {
			c := rapid.Bool().Draw(t, "controller")
			pv.OwnerReferences = []metav1.OwnerReference{{Kind: "K", Name: "n", Controller: &c}}
		}
		orig := pv.DeepCopy()
		keepers := rewrite.KeepersOf(pv)
		reconciles := false
		for _, k := range keepers {
			reconciles = reconciles || k.Reconciles
		}
		changed := rapid.Bool().Draw(t, "changed")
		err := rewrite.KeptRefusal("PersistentVolume", pv, changed)
		want := reconciles && !changed && pv.Annotations[rewrite.AnnSourceChanged] != "true"
		if (err != nil) != want {
			t.Fatalf("refusal %v, want one: %v (keepers %+v)", err, want, keepers)
		}
		if diff := cmp.Diff(orig, pv); diff != "" {
			t.Fatalf("input modified:\n%s", diff)
		}
	})
}

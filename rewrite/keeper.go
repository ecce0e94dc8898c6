package rewrite

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/plugin"
)

// AnnSourceChanged is the annotation with which an administrator says that
// the source a reconciler keeps an object from (a chart's values, a
// manifest in Git, an addon's file) now has the form the rewrite writes, so
// that the rewrite may change the object: value "true". The rewrite keeps
// it on the object it writes.
const AnnSourceChanged = "csimigrate.io/source-changed"

// Keeper is a tool that keeps an object as a source of its own says, found
// from the object's metadata.
type Keeper struct {
	// Tool is the tool: "Helm", "Flux", "Argo CD", "addon manager" or
	// "owner" (an operator, through a controller owner reference).
	Tool string `json:"tool"`
	// Kind and Name are what the tool keeps the object for: a Helm
	// "release", a Flux "Kustomization" or "HelmRelease" (Name
	// "namespace/name"), an Argo CD "Application", the owner's kind and
	// name; Name is "" when the metadata does not say.
	Kind string `json:"kind,omitempty"`
	Name string `json:"name,omitempty"`
	// Evidence is the metadata that says so: the labels, annotations,
	// owner reference or managed-fields managers.
	Evidence []string `json:"evidence"`
	// Source is where a change of the object belongs, in words.
	Source string `json:"source"`
	// Reconciles is false for a tool that only creates the object when it
	// is missing (the addon manager's EnsureExists mode): it does not undo
	// a change.
	Reconciles bool `json:"reconciles"`
	// Replaces says that the tool deletes and creates the object again when
	// it differs from its source (Argo CD's sync option Replace=true).
	Replaces bool `json:"replaces,omitempty"`
}

// String is the keeper in words: "Helm release ns/name", "its owner
// CephCluster c".
func (k Keeper) String() string {
	switch {
	case k.Tool == "owner":
		return "its owner " + k.Kind + " " + k.Name
	case k.Name == "":
		return k.Tool
	}
	return k.Tool + " " + k.Kind + " " + k.Name
}

// The metadata reconcilers leave (../shared/reference/reconcilers.md).
const (
	labelManagedBy      = "app.kubernetes.io/managed-by"
	labelInstance       = "app.kubernetes.io/instance"
	annHelmRelease      = "meta.helm.sh/release-name"
	annHelmNamespace    = "meta.helm.sh/release-namespace"
	labelFluxKustomize  = "kustomize.toolkit.fluxcd.io/name"
	labelFluxKustomNS   = "kustomize.toolkit.fluxcd.io/namespace"
	labelFluxHelm       = "helm.toolkit.fluxcd.io/name"
	labelFluxHelmNS     = "helm.toolkit.fluxcd.io/namespace"
	annArgoTracking     = "argocd.argoproj.io/tracking-id"
	annArgoSyncOptions  = "argocd.argoproj.io/sync-options"
	labelAddonMode      = "addonmanager.kubernetes.io/mode"
	addonModeReconcile  = "Reconcile"
	addonModeEnsure     = "EnsureExists"
	managerHelm         = "helm"
	managerFluxKustom   = "kustomize-controller"
	managerFluxHelm     = "helm-controller"
	managerArgoCD       = "argocd-controller"
	sourceAddonManifest = "the addon's manifest in the addon manager's directory on the control-plane nodes"
)

// keeperRules find keepers in an object's metadata: one rule per tool, each
// with the metadata that tool leaves.
var keeperRules = []func(o metav1.Object) *Keeper{
	helmKeeper, fluxKustomizeKeeper, fluxHelmKeeper, argoKeeper, addonKeeper,
}

// managerTools are the managed-fields managers of the tools, for an object
// whose labels and annotations say nothing (an input that keeps
// managedFields).
var managerTools = map[string]Keeper{
	managerHelm:       {Tool: "Helm", Source: "the values or templates of its Helm release's chart"},
	managerFluxKustom: {Tool: "Flux", Source: "the manifest in the Git source of its Flux Kustomization"},
	managerFluxHelm:   {Tool: "Flux", Source: "the values of its Flux HelmRelease"},
	managerArgoCD:     {Tool: "Argo CD", Source: "the Git manifest or chart values of its Argo CD Application"},
}

func nsName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func helmKeeper(o metav1.Object) *Keeper {
	a, l := o.GetAnnotations(), o.GetLabels()
	if rel := a[annHelmRelease]; rel != "" {
		name := nsName(a[annHelmNamespace], rel)
		return &Keeper{Tool: "Helm", Kind: "release", Name: name, Reconciles: true, Evidence: []string{"annotation " + annHelmRelease + "=" + rel},
			Source: "the values or templates of the chart of Helm release " + name}
	}
	if l[labelManagedBy] == "Helm" {
		return &Keeper{Tool: "Helm", Reconciles: true, Evidence: []string{"label " + labelManagedBy + "=Helm"},
			Source: "the values or templates of the chart it was rendered from, by Helm or by a tool that renders charts (Argo CD, Flux)"}
	}
	return nil
}

func fluxKustomizeKeeper(o metav1.Object) *Keeper {
	l := o.GetLabels()
	if n := l[labelFluxKustomize]; n != "" {
		name := nsName(l[labelFluxKustomNS], n)
		return &Keeper{Tool: "Flux", Kind: "Kustomization", Name: name, Reconciles: true, Evidence: []string{"label " + labelFluxKustomize + "=" + n},
			Source: "the manifest in the Git source of Flux Kustomization " + name}
	}
	return nil
}

func fluxHelmKeeper(o metav1.Object) *Keeper {
	l := o.GetLabels()
	if n := l[labelFluxHelm]; n != "" {
		name := nsName(l[labelFluxHelmNS], n)
		return &Keeper{Tool: "Flux", Kind: "HelmRelease", Name: name, Reconciles: true, Evidence: []string{"label " + labelFluxHelm + "=" + n},
			Source: "the values of Flux HelmRelease " + name}
	}
	return nil
}

func argoKeeper(o metav1.Object) *Keeper {
	a, l := o.GetAnnotations(), o.GetLabels()
	k := &Keeper{Tool: "Argo CD", Kind: "Application", Reconciles: true}
	switch {
	case a[annArgoTracking] != "":
		k.Name, _, _ = strings.Cut(a[annArgoTracking], ":")
		k.Evidence = []string{"annotation " + annArgoTracking}
	case l[labelInstance] != "" && l[labelManagedBy] != "Helm" && a[annHelmRelease] == "":
		// Label tracking (before Argo CD 3.0); Helm charts set the label
		// too, which the Helm rule reports.
		k.Name = l[labelInstance]
		k.Evidence = []string{"label " + labelInstance + "=" + k.Name + " (Argo CD's label tracking; other tools set it too)"}
	default:
		return nil
	}
	k.Source = "the Git manifest or chart values of Argo CD Application " + k.Name
	if opts := a[annArgoSyncOptions]; slices.ContainsFunc(strings.Split(opts, ","), func(s string) bool { return strings.TrimSpace(s) == "Replace=true" }) {
		k.Replaces = true
		k.Evidence = append(k.Evidence, "annotation "+annArgoSyncOptions+"="+opts)
	}
	return k
}

func addonKeeper(o metav1.Object) *Keeper {
	switch mode := o.GetLabels()[labelAddonMode]; mode {
	case addonModeReconcile, addonModeEnsure:
		return &Keeper{Tool: "addon manager", Reconciles: mode == addonModeReconcile, Evidence: []string{"label " + labelAddonMode + "=" + mode}, Source: sourceAddonManifest}
	}
	return nil
}

// KeepersOf are the tools that keep o from a source of their own, by o's
// labels, annotations, controller owner reference and managed-fields
// managers, in that order; none for an object nothing keeps.
func KeepersOf(o metav1.Object) []Keeper {
	if o == nil {
		return nil
	}
	var out []Keeper
	for _, rule := range keeperRules {
		if k := rule(o); k != nil {
			out = append(out, *k)
		}
	}
	for _, ref := range o.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			owner := ref.Kind + " " + ref.Name
			out = append(out, Keeper{Tool: "owner", Kind: ref.Kind, Name: ref.Name, Reconciles: true, Evidence: []string{"controller owner reference " + ref.APIVersion + " " + owner},
				Source: "its owner " + owner + ", whose controller writes the object as the owner says"})
		}
	}
	for _, m := range o.GetManagedFields() {
		k, ok := managerTools[m.Manager]
		if !ok {
			continue
		}
		ev := "managed-fields manager " + m.Manager
		if i := slices.IndexFunc(out, func(o Keeper) bool { return o.Tool == k.Tool }); i >= 0 {
			if !slices.Contains(out[i].Evidence, ev) {
				out[i].Evidence = append(slices.Clone(out[i].Evidence), ev)
			}
			continue
		}
		k.Reconciles, k.Evidence = true, []string{ev}
		out = append(out, k)
	}
	return out
}

// SourceChangedOn reports whether o carries AnnSourceChanged: "true".
func SourceChangedOn(o metav1.Object) bool {
	return o != nil && o.GetAnnotations()[AnnSourceChanged] == "true"
}

// KeptRefusal is why a rewrite (in any direction) leaves o, a kind's object,
// as it is for the tools that keep it (KeepersOf): one that reconciles it
// puts the old form back at its next reconcile, or, for a PV, fails every
// sync on its immutable source (or with Replace=true deletes the PV and
// creates the old one). nil when none reconciles it, or when the
// administrator said its source has changed: changed (the program's own
// list), or AnnSourceChanged on o.
func KeptRefusal(kind string, o metav1.Object, changed bool) error {
	if o == nil || changed || SourceChangedOn(o) {
		return nil
	}
	var by, where []string
	replaces := false
	for _, k := range KeepersOf(o) {
		if !k.Reconciles {
			continue
		}
		by = append(by, k.String()+" ("+strings.Join(k.Evidence, ", ")+")")
		where = append(where, k.Source)
		replaces = replaces || k.Replaces
	}
	if len(by) == 0 {
		return nil
	}
	reason := fmt.Sprintf("kept by %s: its next reconcile puts the form it keeps back", strings.Join(by, "; "))
	if kind == "PersistentVolume" {
		reason += " (a PV's source cannot change in place: its syncs fail from then on"
		if replaces {
			reason += ", and with Replace=true it deletes the rewritten PV and creates the old one"
		}
		reason += ")"
	}
	return &Refusal{Code: CodeKeptByReconciler, Reason: reason,
		Remedy: fmt.Sprintf("put the new form in %s, with the reconciler paused for it; then say so with annotation %s=true on %s %s, and resume the reconciler after the rewrite",
			strings.Join(where, "; "), AnnSourceChanged, kind, o.GetName()),
		Action: plugin.ActionChangeSource, ActsOn: ObjectRef{Kind: kind, Name: o.GetName()}.Resource()}
}

// ChangedSources is the set of objects an administrator has said the
// sources of have changed (KeptRefusal's changed), as a program's option.
type ChangedSources []ObjectRef

// Has reports whether the set names the kind's object of that name.
func (c ChangedSources) Has(kind, namespace, name string) bool {
	return slices.Contains(c, ObjectRef{Kind: kind, Namespace: namespace, Name: name})
}

// sourceAnnotations are the annotations the tools and the API server put
// on an object, and csimigrate's own records, which a source does not hold.
var sourceAnnotations = []string{annHelmRelease, annHelmNamespace, annArgoTracking, AnnSourceChanged,
	"kubectl.kubernetes.io/last-applied-configuration", "pv.kubernetes.io/bound-by-controller"}

// sourceLabels are the labels a tool puts on the objects it applies.
var sourceLabels = []string{labelFluxKustomize, labelFluxKustomNS, labelFluxHelm, labelFluxHelmNS}

// sourceMeta is m as a source keeps it: no server-set fields, no labels
// and annotations a tool or csimigrate adds when it writes the object.
func sourceMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace}
	for k, v := range m.Labels {
		if !slices.Contains(sourceLabels, k) {
			if out.Labels == nil {
				out.Labels = map[string]string{}
			}
			out.Labels[k] = v
		}
	}
	for k, v := range m.Annotations {
		if !slices.Contains(sourceAnnotations, k) && !strings.Contains(k, "csimigrate.io/") {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	return out
}

// SourcePV is pv as the source a reconciler keeps it from should hold it
// (a manifest to commit): without status, server-set metadata, the tools'
// and csimigrate's own metadata, and the claim reference's uid and version.
func SourcePV(pv *v1.PersistentVolume) *v1.PersistentVolume {
	if pv == nil {
		return nil
	}
	out := &v1.PersistentVolume{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"}, ObjectMeta: sourceMeta(pv.ObjectMeta)}
	pv.Spec.DeepCopyInto(&out.Spec)
	if c := out.Spec.ClaimRef; c != nil {
		out.Spec.ClaimRef = &v1.ObjectReference{Kind: c.Kind, APIVersion: c.APIVersion, Namespace: c.Namespace, Name: c.Name}
	}
	return out
}

// Source is the replacement as the source a reconciler keeps the PV from
// should hold it once the rewrite has ended (SourcePV, with the reclaim
// policy the last step restores); nil without a replacement.
func (p PV) Source() *v1.PersistentVolume {
	out := SourcePV(p.CSI)
	if out != nil && p.RestorePolicy != "" {
		out.Spec.PersistentVolumeReclaimPolicy = p.RestorePolicy
	}
	return out
}

// SourceClass is sc as the source a reconciler keeps it from should hold it
// (SourcePV's rules).
func SourceClass(sc *storagev1.StorageClass) *storagev1.StorageClass {
	if sc == nil {
		return nil
	}
	out := sc.DeepCopy()
	out.TypeMeta = metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"}
	out.ObjectMeta = sourceMeta(sc.ObjectMeta)
	return out
}

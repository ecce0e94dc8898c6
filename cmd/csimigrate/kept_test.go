package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
)

// TestRewriteApplyKeptByReconciler: objects that Helm, Flux and Argo CD keep,
// on the real API server. The plan (live, and from a dump, which keeps the
// managed-fields managers) names each keeper and blocks; rewrite -apply and
// its dry run refuse them and change nothing; once the admin says the
// sources changed (-source-changed, or the annotation) they are rewritten;
// then each reconciler's next sync of the form the plan printed is accepted
// by the API server and changes nothing, where a sync of the old form fails
// on the PV's immutable source (what a rewrite made behind the
// reconciler's back would meet).
func TestRewriteApplyKeptByReconciler(t *testing.T) {
	c, kc := startServer(t)
	ctx := context.Background()
	const ns = "kept"
	// A PV Argo CD keeps (tracking annotation), one Flux keeps, seen only
	// through its managed fields (kustomize-controller's sync), and their
	// class, which a Helm release keeps (its admin secret lets the driver
	// delete them: they end with Delete, as they had).
	argo := testenv.CreateBoundPV(t, c, ns, "kept-argo", func(pv *v1.PersistentVolume) {
		pv.Annotations = map[string]string{"argocd.argoproj.io/tracking-id": "storage:/PersistentVolume:/kept-argo"}
		pv.Spec.StorageClassName = "kept-helm"
	})
	flux := testenv.CreateBoundPV(t, c, ns, "kept-flux", func(pv *v1.PersistentVolume) { pv.Spec.StorageClassName = "kept-helm" })
	flux = reconcile(t, c, "kustomize-controller", flux, `{"metadata":{"labels":{"team":"db"}}}`)
	if _, err := c.CoreV1().Secrets(ns).Create(ctx, testenv.CephSecret(ns, "ceph-admin", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	class, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "kept-helm",
		Labels:      map[string]string{"app.kubernetes.io/managed-by": "Helm"},
		Annotations: map[string]string{"meta.helm.sh/release-name": "storage", "meta.helm.sh/release-namespace": "infra"}},
		Provisioner: "kubernetes.io/rbd", Parameters: map[string]string{"monitors": testenv.Monitor, "adminSecretName": "ceph-admin", "adminSecretNamespace": ns, "pool": "rbd"}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]string{"pv/kept-argo": argo.ResourceVersion, "pv/kept-flux": flux.ResourceVersion, "storageclass/kept-helm": class.ResourceVersion}

	// The plan, live and from a dump.
	dump, stderr, code := runCmd(t, "", "dump", "-kubeconfig", kc)
	if code != cli.ExitOK {
		t.Fatalf("dump: exit %d: %s", code, stderr)
	}
	file := filepath.Join(t.TempDir(), "cluster.json")
	if err := os.WriteFile(file, []byte(dump), 0o600); err != nil {
		t.Fatal(err)
	}
	var planned *plan.Plan
	for _, input := range [][]string{{"-live", "-kubeconfig", kc}, {"-f", file}} {
		out, stderr, code := runCmd(t, "", append([]string{"plan", "-o", "json"}, input...)...)
		if code != cli.ExitBlocked {
			t.Fatalf("plan %v: exit %d: %s\n%s", input, code, stderr, out)
		}
		var p plan.Plan
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatal(err)
		}
		keepers := map[string]string{}
		for _, v := range p.Volumes {
			if f := findingOf(v.Findings, plan.FindingKeptByReconciler); f != nil && len(v.KeptBy) == 1 && !v.Migratable && v.Source != nil && strings.Contains(f.Remedy, "-source-changed pv/"+v.Name) {
				keepers["pv/"+v.Name] = v.KeptBy[0].String()
			}
		}
		for _, s := range p.StorageClasses {
			if s.Kept != nil && len(s.KeptBy) == 1 && !s.Migratable && s.Source != nil {
				keepers["storageclass/"+s.Name] = s.KeptBy[0].String()
			}
		}
		want := map[string]string{"pv/kept-argo": "Argo CD Application storage", "pv/kept-flux": "Flux", "storageclass/kept-helm": "Helm release infra/storage"}
		if diff := cmp.Diff(want, keepers); diff != "" {
			t.Errorf("plan %v: keepers (-want +got):\n%s", input, diff)
		}
		planned = &p
	}
	table, _, _ := runCmd(t, "", "plan", "-f", file)
	for _, want := range []string{"KEPT BY RECONCILERS", "pv/kept-flux: Flux (managed-fields manager kustomize-controller)", "storageclass/kept-helm: Helm release infra/storage",
		"provisioner: " + plugin.RBDDriverName, "driver: " + plugin.RBDDriverName} {
		if !strings.Contains(table, want) {
			t.Errorf("plan's table lacks %q:\n%s", want, table)
		}
	}

	// The writer refuses them, in its dry run as in its run, and changes
	// nothing.
	for _, dry := range []bool{true, false} {
		args := []string{"rewrite", "-apply", "-kubeconfig", kc}
		if dry {
			args = append(args, "-dry-run")
		}
		out, stderr, code := runCmd(t, "", args...)
		if code != cli.ExitBlocked {
			t.Fatalf("%v: exit %d: %s\n%s", args, code, stderr, out)
		}
		for obj := range before {
			if !regexp.MustCompile(`(?m)` + obj + `: (refused \([^)]*\), left as it (was|is): )?(the rewrite would refuse it: )?kept by`).MatchString(out + stderr) {
				t.Errorf("%v: %s not refused as kept:\n%s\n%s", args, obj, out, stderr)
			}
		}
		checkUnchanged(t, c, before)
	}
	// So does the review.
	if _, stderr, code := runCmd(t, "", "rewrite", "-f", file); code == cli.ExitOK || !strings.Contains(stderr, "pv/kept-argo: refused (KeptByReconciler)") {
		t.Errorf("review: exit %d: %s", code, stderr)
	}

	// The admin has changed the sources: the class says so itself, the
	// PVs are named.
	if _, err := c.StorageV1().StorageClasses().Patch(ctx, "kept-helm", types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+rewrite.AnnSourceChanged+`":"true"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc, "-source-changed", "pv/kept-argo", "-source-changed", "pv/kept-flux")
	if code != cli.ExitOK {
		t.Fatalf("with the sources changed: exit %d: %s\n%s", code, stderr, out)
	}

	// Each reconciler's next sync: the form the plan printed changes
	// nothing the rewrite wrote; the old form is refused.
	for _, v := range planned.Volumes {
		live, err := c.CoreV1().PersistentVolumes().Get(ctx, v.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if live.Spec.CSI == nil || live.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
			t.Fatalf("%s not rewritten as planned: %+v", v.Name, live.Spec)
		}
		src, _ := json.Marshal(v.Source)
		after := reconcile(t, c, "argocd-controller", live, string(src))
		if diff := cmp.Diff(live.Spec, after.Spec); diff != "" {
			t.Errorf("%s: the reconcile of the planned form changed the rewritten PV (-rewritten +reconciled):\n%s", v.Name, diff)
		}
		old, _ := json.Marshal(map[string]any{"spec": map[string]any{"rbd": argo.Spec.RBD}})
		_, err = c.CoreV1().PersistentVolumes().Patch(ctx, v.Name, types.MergePatchType, old, metav1.PatchOptions{FieldManager: "argocd-controller"})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "immutable") {
			t.Errorf("%s: a sync of the old form: %v, want the API server's immutable-source refusal", v.Name, err)
		}
	}
	for _, s := range planned.StorageClasses {
		live, err := c.StorageV1().StorageClasses().Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		src, _ := json.Marshal(s.Source)
		after, err := c.StorageV1().StorageClasses().Patch(ctx, s.Name, types.ApplyPatchType, src, metav1.PatchOptions{FieldManager: "helm", Force: ptr(true)})
		if err != nil {
			t.Fatalf("%s: the reconcile of the planned form: %v", s.Name, err)
		}
		if live.Provisioner != after.Provisioner || !cmp.Equal(live.Parameters, after.Parameters) || after.Provisioner != plugin.RBDDriverName {
			t.Errorf("%s: the reconcile changed the class: %s %v -> %s %v", s.Name, live.Provisioner, live.Parameters, after.Provisioner, after.Parameters)
		}
	}
}

// reconcile merges patch into pv as a reconciler's client-side apply does
// (a merge patch of the fields it sets), as manager; it fails the test when
// the API server refuses it.
func reconcile(t *testing.T, c kubernetes.Interface, manager string, pv *v1.PersistentVolume, patch string) *v1.PersistentVolume {
	t.Helper()
	out, err := c.CoreV1().PersistentVolumes().Patch(context.Background(), pv.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: manager})
	if err != nil {
		t.Fatalf("%s's sync of %s: %v", manager, pv.Name, err)
	}
	return out
}

// checkUnchanged fails the test for each of "pv/NAME" or
// "storageclass/NAME" whose resourceVersion is no longer the one given.
func checkUnchanged(t *testing.T, c kubernetes.Interface, rvs map[string]string) {
	t.Helper()
	ctx := context.Background()
	for obj, rv := range rvs {
		kind, name, _ := strings.Cut(obj, "/")
		var now metav1.Object
		var err error
		if kind == "pv" {
			now, err = c.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		} else {
			now, err = c.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
		}
		if err != nil || now.GetResourceVersion() != rv {
			t.Errorf("%s changed (%v)", obj, err)
		}
	}
}

// findingOf is the finding of code among fs, nil when there is none.
func findingOf(fs []plugin.Finding, code string) *plugin.Finding {
	for i := range fs {
		if fs[i].Code == code {
			return &fs[i]
		}
	}
	return nil
}

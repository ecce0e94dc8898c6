package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/translate"
)

// refusedLine is a refusal line of rewrite -apply (and its dry run) on
// stdout, and of the review's comments: the object and its codes.
var refusedLine = regexp.MustCompile(`(?m)^(?:# )?((?:pv|storageclass)/[^:]+): refused \(([^)]*)\)`)

// refusedIn maps each object a run's output refuses to its codes.
func refusedIn(out string) map[string]string {
	m := map[string]string{}
	for _, s := range refusedLine.FindAllStringSubmatch(out, -1) {
		m[s[1]] = s[2]
	}
	return m
}

// planVerdictsOf maps each in-tree object plan -live blocks to its codes
// (a volume's Blocker findings, a class's codes), as the runs word them.
func planVerdictsOf(t *testing.T, kc string) map[string]string {
	t.Helper()
	out, stderr, code := runCmd(t, "", "plan", "-live", "-kubeconfig", kc, "-o", "json")
	if code != cli.ExitOK && code != cli.ExitBlocked {
		t.Fatalf("plan: exit %d: %s", code, stderr)
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, v := range p.Volumes {
		if v.Migratable {
			continue
		}
		var cs []string
		for _, f := range v.Findings {
			if f.Severity == plugin.SeverityBlocker {
				cs = append(cs, f.Code)
			}
		}
		m["pv/"+v.Name] = strings.Join(cs, ", ")
	}
	for _, sc := range p.StorageClasses {
		if !sc.Migratable {
			m["storageclass/"+sc.Name] = strings.Join(sc.Codes, ", ")
		}
	}
	return m
}

// On a cluster whose Ceph CSI does not serve the volumes' entry, and where
// one class's admin secret is missing too, the plan, the review, the dry
// run and the real run give each object the same verdict with the same
// codes: the Ceph PVs and the RBD classes stay exactly as they were (the
// cluster's default class among them), the summary counts every refusal
// by code on stdout, and once the entry and the secret are there, all of
// them are rewritten.
func TestVerdictsAgree(t *testing.T) {
	c, kc := startServer(t)
	ctx := context.Background()
	names := testenv.Seed(t, c, "agree")
	own := `[{"clusterID":"own","monitors":["10.9.9.9:6789"]}]`
	if err := testenv.SetCephCSIConfig(ctx, c, []byte(own)); err != nil {
		t.Fatal(err)
	}
	// The cluster's default class, in-tree, whose admin secret is missing
	// as well.
	def := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "rbd-default", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner: plugin.RBDInTreePluginName, Parameters: map[string]string{"monitors": testenv.Monitor, "adminSecretName": "ceph-admin-default", "adminSecretNamespace": "kube-system", "pool": "rbd"}}
	if _, err := c.StorageV1().StorageClasses().Create(ctx, def, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := snapshotObjects(t, c)

	want := planVerdictsOf(t, kc)
	wantRefused := map[string]string{"pv/agree-rbd": "CephEntryMissing", "pv/agree-rbd-static": "CephEntryMissing", "pv/agree-cephfs": "CephEntryMissing",
		"storageclass/rbd-agree": "CephEntryMissing", "storageclass/rbd-default": "SecretMissing, CephEntryMissing"}
	if diff := cmpVerdicts(wantRefused, want); diff != "" {
		t.Fatalf("plan -live verdicts: %s", diff)
	}

	dump, stderr, code := runCmd(t, "", "dump", "-kubeconfig", kc)
	if code != cli.ExitOK {
		t.Fatalf("dump: exit %d: %s", code, stderr)
	}
	review, stderr, code := runCmd(t, dump, "rewrite", "-f", "-")
	if code != cli.ExitBlocked {
		t.Fatalf("review: exit %d, want %d:\n%s\n%s", code, cli.ExitBlocked, review, stderr)
	}
	if diff := cmpVerdicts(want, refusedIn(review)); diff != "" {
		t.Errorf("review: %s\n%s", diff, review)
	}
	for obj := range want {
		kind, name, _ := strings.Cut(obj, "/")
		step := map[string]string{"pv": "rewrite_pv ", "storageclass": "rewrite_sc "}[kind]
		if strings.Contains(review, step+name+" ") {
			t.Errorf("the review has the steps of %s, which it refuses", obj)
		}
	}
	if !strings.Contains(review, "rewrite_pv agree-vsphere ") {
		t.Errorf("the review lacks the steps of the vSphere PV, which nothing blocks:\n%s", review)
	}

	for _, args := range [][]string{{"-dry-run"}, nil} {
		out, stderr, code := runCmd(t, "", append([]string{"rewrite", "-apply", "-kubeconfig", kc}, args...)...)
		if code != cli.ExitBlocked {
			t.Fatalf("rewrite -apply %v: exit %d, want %d:\n%s\n%s", args, code, cli.ExitBlocked, out, stderr)
		}
		if diff := cmpVerdicts(want, refusedIn(out)); diff != "" {
			t.Errorf("rewrite -apply %v: %s\n%s", args, diff, out)
		}
		summary := "5 refused and left as they were (CephEntryMissing 5, SecretMissing 1)"
		if !strings.Contains(out, summary) {
			t.Errorf("rewrite -apply %v: no summary %q on stdout:\n%s", args, summary, out)
		}
	}
	// Left exactly as they were.
	after := snapshotObjects(t, c)
	for obj := range want {
		if after[obj] != before[obj] {
			t.Errorf("%s changed: %s, was %s", obj, after[obj], before[obj])
		}
	}
	if pv, err := c.CoreV1().PersistentVolumes().Get(ctx, "agree-vsphere", metav1.GetOptions{}); err != nil || pv.Spec.CSI == nil {
		t.Errorf("the vSphere PV, which nothing blocks, was not rewritten: %v", err)
	}

	// Once the entry and the secret are there, nothing is refused.
	withEntry := strings.TrimSuffix(own, "]") + "," + strings.TrimPrefix(testenv.CephCSIConfig, "[")
	if err := testenv.SetCephCSIConfig(ctx, c, []byte(withEntry)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Secrets("kube-system").Create(ctx, testenv.CephSecret("kube-system", "ceph-admin-default", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := planVerdictsOf(t, kc); len(got) != 0 {
		t.Errorf("plan -live with the entry and the secret: still blocks %v", got)
	}
	out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc)
	if code != cli.ExitOK || len(refusedIn(out)) != 0 {
		t.Fatalf("rewrite -apply with the entry: exit %d:\n%s\n%s", code, out, stderr)
	}
	testenv.RewrittenStates(t, c, "agree", names)
	// Named again, a rewritten PV is already done.
	out, stderr, code = runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc, "agree-rbd")
	if code != cli.ExitOK || !strings.Contains(out, "pv/agree-rbd: already rewritten") {
		t.Errorf("rewrite -apply of a rewritten PV: exit %d:\n%s\n%s", code, out, stderr)
	}
	for _, name := range []string{"rbd-agree", "rbd-default"} {
		sc, err := c.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
		if err != nil || sc.Provisioner != plugin.RBDDriverName {
			t.Errorf("class %s after the rewrite: %v %v", name, err, sc)
		}
	}
}

// snapshotObjects is each PV's and StorageClass's uid and resourceVersion.
func snapshotObjects(t *testing.T, c kubernetes.Interface) map[string]string {
	t.Helper()
	ctx := context.Background()
	m := map[string]string{}
	pvs, err := c.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pv := range pvs.Items {
		m["pv/"+pv.Name] = string(pv.UID) + "@" + pv.ResourceVersion + sourceOf(&pv)
	}
	scs, err := c.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scs.Items {
		m["storageclass/"+sc.Name] = string(sc.UID) + "@" + sc.ResourceVersion + " " + sc.Provisioner
	}
	return m
}

func sourceOf(pv *v1.PersistentVolume) string {
	if n := plugin.InTreeNameOfPV(pv); n != "" {
		return " " + n
	}
	return " csi"
}

// cmpVerdicts says how got differs from want ("" when not).
func cmpVerdicts(want, got map[string]string) string {
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			diffs = append(diffs, fmt.Sprintf("%s: %q, want %q", k, got[k], want[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: %q, want none", k, got[k]))
		}
	}
	return strings.Join(diffs, "; ")
}

// refusedWith reports whether out has the line of obj's refusal ("pv/x"),
// whatever its codes, with a reason that starts with text.
func refusedWith(out, obj, text string) bool {
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(obj) + `: refused \([^)]*\), left as it was: ` + regexp.QuoteMeta(text)).MatchString(out)
}

// A rewrite -apply interrupted after it deleted a PV (the write limit, as
// a crash would leave it): plan -live, and plan -f of a dump, name the PV,
// its claim (Lost while the PV is gone) and the remedy, a run again; the
// rerun resumes it, and the plan no longer names it.
func TestPlanNamesInterruptedRun(t *testing.T) {
	c, kc := startServer(t)
	ctx := context.Background()
	testenv.CreateBoundPV(t, c, "cut", "cut-a", nil)
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	holder := apply.HolderFunc(func() bool { return true })
	w, err := apply.New(c, tr, cli.Klog0(), nil, apply.Options{MaxWrites: 4, Lease: holder}) // Retain, save, delete, its pv-protection finalizer
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.PVs(ctx, []apply.Target{{Name: "cut-a"}}); !errors.Is(err, apply.ErrWriteLimit) {
		t.Fatalf("the interrupted run: %v", err)
	}
	for i := 0; ; i++ {
		if _, err := c.CoreV1().PersistentVolumes().Get(ctx, "cut-a", metav1.GetOptions{}); err != nil {
			break
		}
		if i == 50 {
			t.Fatal("the PV is still there after the run's delete")
		}
		time.Sleep(100 * time.Millisecond)
	}
	dump, stderr, code := runCmd(t, "", "dump", "-kubeconfig", kc)
	if code != cli.ExitOK {
		t.Fatalf("dump: exit %d: %s", code, stderr)
	}
	for _, args := range [][]string{{"-live", "-kubeconfig", kc}, {"-f", "-"}} {
		in := ""
		if args[0] == "-f" {
			in = dump
		}
		out, stderr, code := runCmd(t, in, append([]string{"plan", "-o", "json"}, args...)...)
		var p plan.Plan
		if err := json.Unmarshal([]byte(out), &p); err != nil || code != cli.ExitBlocked {
			t.Fatalf("plan %v: exit %d, %v: %s", args, code, err, stderr)
		}
		i := slices.IndexFunc(p.Hazards, func(f plugin.Finding) bool { return f.Code == plan.FindingInterruptedRun && f.Object == "pv/cut-a" })
		if i < 0 || p.Hazards[i].Severity != plugin.SeverityBlocker || !strings.Contains(p.Hazards[i].Message, "claim cut/cut-a") || !strings.Contains(p.Hazards[i].Remedy, "run the rewrite again") {
			t.Errorf("plan %v: hazards %+v: want the interrupted run named, with its claim", args, p.Hazards)
		}
	}
	if out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc); code != cli.ExitOK {
		t.Fatalf("the rerun: exit %d\n%s\n%s", code, out, stderr)
	}
	out, _, _ := runCmd(t, "", "plan", "-live", "-kubeconfig", kc)
	if strings.Contains(out, plan.FindingInterruptedRun) || !strings.Contains(out, "RESULT: nothing to migrate") {
		t.Errorf("after the rerun:\n%s", out)
	}
}

// -n scopes plan, the review and rewrite -apply to the claims of one
// namespace, as kubectl's -n does: another namespace's PVs and every
// StorageClass (which serve all namespaces) are left as they are.
func TestNamespaceScopes(t *testing.T) {
	c, kc := startServer(t)
	a := testenv.Seed(t, c, "nsa")
	b := testenv.Seed(t, c, "nsb")
	before := snapshotObjects(t, c)

	out, stderr, code := runCmd(t, "", "plan", "-live", "-kubeconfig", kc, "-n", "nsa", "-o", "json")
	var p plan.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan -n: exit %d, %v: %s", code, err, stderr)
	}
	var planned []string
	for _, v := range p.Volumes {
		planned = append(planned, v.Name)
	}
	if slices.Sort(planned); !slices.Equal(planned, a) || len(p.StorageClasses) != 0 {
		t.Errorf("plan -n nsa: volumes %v, classes %+v; want %v and no class", planned, p.StorageClasses, a)
	}
	dump, _, _ := runCmd(t, "", "dump", "-kubeconfig", kc)
	review, stderr, _ := runCmd(t, dump, "rewrite", "-f", "-", "-n", "nsa")
	for _, n := range b {
		if strings.Contains(review, "rewrite_pv "+n+" ") {
			t.Errorf("review -n nsa has the steps of %s:\n%s", n, review)
		}
	}
	if strings.Contains(review, "rewrite_sc ") || !strings.Contains(review, "rewrite_pv nsa-vsphere ") {
		t.Errorf("review -n nsa: %s\n%s", stderr, review)
	}
	if out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc, "-n", "nsa"); code != cli.ExitOK {
		t.Fatalf("rewrite -apply -n nsa: exit %d\n%s\n%s", code, out, stderr)
	}
	after := snapshotObjects(t, c)
	for obj, was := range before {
		_, name, _ := strings.Cut(obj, "/")
		changed := after[obj] != was
		if want := slices.Contains(a, name); changed != want {
			t.Errorf("%s: changed %v, want %v", obj, changed, want)
		}
	}
	if _, _, code := runCmd(t, "", "plan", "-live", "-kubeconfig", kc, "-n", "nsa", "-A"); code != cli.ExitUsage {
		t.Errorf("-n with -A: exit %d, want %d", code, cli.ExitUsage)
	}
}

// plan, with no input named, plans the cluster of the current kubeconfig
// context for the release its API server runs, as kubectl reads them: on 1.37 it says so first, names no gate that 1.37 lacks, and blocks a
// volume in use (no kubelet of 1.37 mounts it in-tree, none migrates it);
// -kubernetes-version asks for another release, and the plan names the
// difference.
func TestPlanReadsTheRelease(t *testing.T) {
	c, kc := startServer(t)
	ctx := context.Background()
	testenv.CreateBoundPV(t, c, "rel", "rel-a", nil)
	if _, err := c.CoreV1().Pods("rel").Create(ctx, testenv.PodOn("rel", "app-0", "", "rel-a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	v, err := c.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	// No input named: the cluster of the current kubeconfig context, as
	// kubectl reads it (not the embedded sample).
	t.Setenv("KUBECONFIG", kc)
	out, stderr, code := runCmd(t, "", "plan")
	first, _, _ := strings.Cut(out, "\n")
	if code != cli.ExitBlocked || first != "KUBERNETES: the API server runs "+v.GitVersion+"; the plan is for 1.37" {
		t.Fatalf("plan -live: exit %d, first line %q: %s\n%s", code, first, stderr, out)
	}
	if strings.Contains(out, "CSIMigrationRBD=true") || !strings.Contains(out, "Kubernetes 1.37 has no in-tree kubernetes.io/rbd plugin") {
		t.Errorf("plan -live on 1.37:\n%s", out)
	}
	out, _, _ = runCmd(t, "", "plan", "-live", "-kubeconfig", kc, "-kubernetes-version", "1.30", "-o", "json")
	var p plan.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if p.KubernetesMinor != 30 || p.ServerVersion != v.GitVersion || !slices.ContainsFunc(p.Hazards, func(f plugin.Finding) bool { return f.Code == plan.FindingVersionMismatch }) {
		t.Errorf("plan -kubernetes-version 1.30 on %s: minor %d, server %q, hazards %+v", v.GitVersion, p.KubernetesMinor, p.ServerVersion, p.Hazards)
	}
}

// For each code the plan gives a PV for what the PV, its claim, its pods
// and its keepers say, the review, the dry run and the real run refuse it
// with the same codes, and leave it as it was.
func TestVerdictsAgreeEveryCode(t *testing.T) {
	c, kc := startServer(t)
	ctx := context.Background()
	const ns = "codes"
	mk := func(name string, edit func(*v1.PersistentVolume)) { testenv.CreateBoundPV(t, c, ns, name, edit) }
	mk("ok", nil)
	mk("fin", func(pv *v1.PersistentVolume) { pv.Finalizers = append(pv.Finalizers, "example.com/hold") })
	mk("prebound", func(pv *v1.PersistentVolume) { pv.Spec.ClaimRef.UID = "" })
	mk("gone", nil) // its claim deleted, held by pvc-protection: being deleted
	if err := c.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Claims truly gone (their pvc-protection finalizer removed), one of
	// them created again (another uid).
	for _, n := range []string{"released", "replaced"} {
		mk(n, nil)
		claims := c.CoreV1().PersistentVolumeClaims(ns)
		if err := claims.Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := claims.Patch(ctx, n, types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, testenv.ClaimFor(ns, "replaced", "replaced"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A vSphere volume, whose driver is not installed.
	mk("nodriver", func(pv *v1.PersistentVolume) {
		pv.Spec.PersistentVolumeSource = v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[ds] kubevols/nodriver.vmdk"}}
	})
	if err := c.StorageV1().CSIDrivers().Delete(ctx, plugin.VSphereDriverName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A CephFS volume that authenticates with a key file on the node: the
	// plugin's own finding, in the plan and in the refusal.
	mk("keyfile", func(pv *v1.PersistentVolume) {
		pv.Spec.PersistentVolumeSource = v1.PersistentVolumeSource{CephFS: &v1.CephFSPersistentVolumeSource{Monitors: []string{testenv.Monitor}, Path: "/volumes/keyfile", SecretFile: "/etc/ceph/admin.secret"}}
	})
	mk("inuse", nil)
	if _, err := c.CoreV1().Pods(ns).Create(ctx, testenv.PodOn(ns, "app-0", "", "inuse"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mk("kept", func(pv *v1.PersistentVolume) {
		pv.Annotations = map[string]string{"argocd.argoproj.io/tracking-id": "storage:/PersistentVolume:/kept"}
	})
	mk("deleting", nil)
	if err := c.CoreV1().PersistentVolumes().Delete(ctx, "deleting", metav1.DeleteOptions{}); err != nil { // held by pv-protection
		t.Fatal(err)
	}
	before := snapshotObjects(t, c)
	want := planVerdictsOf(t, kc)
	for obj, code := range map[string]string{"pv/fin": "UnknownFinalizer", "pv/prebound": "PreBound", "pv/gone": "ClaimBeingDeleted", "pv/inuse": "InUse",
		"pv/kept": "KeptByReconciler", "pv/deleting": "BeingDeleted", "pv/released": "ClaimGone", "pv/replaced": "ClaimReplaced", "pv/nodriver": "CSIDriverMissing", "pv/keyfile": "CephFSSecretFileOnly"} {
		if !slices.Contains(strings.Split(want[obj], ", "), code) {
			t.Errorf("plan -live: %s has %q, want %s among them", obj, want[obj], code)
		}
	}
	if _, ok := want["pv/ok"]; ok {
		t.Errorf("plan -live blocks pv/ok: %q", want["pv/ok"])
	}
	dump, stderr, code := runCmd(t, "", "dump", "-kubeconfig", kc)
	if code != cli.ExitOK {
		t.Fatalf("dump: exit %d: %s", code, stderr)
	}
	review, _, _ := runCmd(t, dump, "rewrite", "-f", "-")
	if diff := cmpVerdicts(want, refusedIn(review)); diff != "" {
		t.Errorf("review: %s", diff)
	}
	for _, args := range [][]string{{"-dry-run"}, nil} {
		out, stderr, code := runCmd(t, "", append([]string{"rewrite", "-apply", "-kubeconfig", kc}, args...)...)
		if code != cli.ExitBlocked {
			t.Fatalf("rewrite -apply %v: exit %d\n%s\n%s", args, code, out, stderr)
		}
		if diff := cmpVerdicts(want, refusedIn(out)); diff != "" {
			t.Errorf("rewrite -apply %v: %s\n%s", args, diff, out)
		}
	}
	after := snapshotObjects(t, c)
	for obj := range want {
		if after[obj] != before[obj] {
			t.Errorf("%s changed: %s, was %s", obj, after[obj], before[obj])
		}
	}
	if pv := getPV(t, c, "ok"); pv.Spec.CSI == nil {
		t.Error("pv/ok, which nothing blocks, was not rewritten")
	}
}

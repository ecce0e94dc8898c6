package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/rewrite"
)

// What the undo refuses, on Kubernetes 1.37 without controllers: RBD and
// CephFS (whose in-tree plugins 1.31 removed) are left as CSI PVs while the
// vSphere PV is undone; a CSI PV csimigrate did not create is not a target;
// a PV in use; a PV whose rewrite is in progress; a PV rewritten without
// the record of what to restore. The dry run and the review change nothing.
func TestUndoRefusals(t *testing.T) {
	c, kc := startServer(t)
	ctx := context.Background()
	undo := func(args ...string) (string, string, int) {
		return runCmd(t, "", append([]string{"rewrite", "-undo", "-apply", "-kubeconfig", kc}, args...)...)
	}
	names := testenv.Seed(t, c, "ref")
	original := testenv.StoredOf(t, c, names)
	if _, _, code := runCmd(t, "", append([]string{"rewrite", "-apply", "-kubeconfig", kc}, append(names, "storageclass/rbd-ref")...)...); code != cli.ExitOK {
		t.Fatal("rewrite failed")
	}
	before := map[string]*v1.PersistentVolume{}
	for _, n := range names {
		before[n] = getPV(t, c, n)
	}
	class := func() *storagev1.StorageClass {
		sc, err := c.StorageV1().StorageClasses().Get(ctx, "rbd-ref", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	csiClass := class()

	// The review and the dry run: on 1.37 the review refuses what the
	// undo refuses (no in-tree Ceph plugin to go back to), as comments in
	// place of their steps, and exits 1; the vSphere PV's undo is there.
	review, stderr, code := runCmd(t, "", "rewrite", "-undo", "-live", "-kubeconfig", kc, "-o", "yaml")
	if code != cli.ExitBlocked || !strings.Contains(review, "vsphereVolume:") || strings.Contains(review, "\n  rbd:") || strings.Contains(review, "provisioner: kubernetes.io/rbd") {
		t.Errorf("rewrite -undo -o yaml: exit %d: %s\n%s", code, stderr, review)
	}
	for _, obj := range []string{"pv/ref-rbd", "pv/ref-rbd-static", "pv/ref-cephfs", "storageclass/rbd-ref"} {
		if got := refusedIn(review)[obj]; got != string(rewrite.CodePluginRemoved) {
			t.Errorf("the undo review: %s refused %q, want %s:\n%s", obj, got, rewrite.CodePluginRemoved, review)
		}
	}
	out, stderr, code := undo("-dry-run", "ref-vsphere")
	if code != cli.ExitOK || !strings.Contains(out, "pv/ref-vsphere: Retain, delete and create as kubernetes.io/vsphere-volume would be accepted") {
		t.Errorf("dry run: exit %d: %s\n%s", code, stderr, out)
	}
	unchanged(t, c, before["ref-vsphere"])

	out, _, code = undo()
	if code != cli.ExitBlocked {
		t.Errorf("undo on 1.37: exit %d, want %d:\n%s", code, cli.ExitBlocked, out)
	}
	for _, n := range []string{"ref-rbd", "ref-rbd-static", "ref-cephfs"} {
		if !refusedWith(out, "pv/"+n, "the API server is Kubernetes 1.37, and 1.31 removed the in-tree plugin") {
			t.Errorf("%s not refused for the release:\n%s", n, out)
		}
		unchanged(t, c, before[n])
		noState(t, c, n)
	}
	if !refusedWith(out, "storageclass/rbd-ref", "the API server is Kubernetes 1.37") {
		t.Errorf("the RBD class was not refused:\n%s", out)
	}
	if diff := cmp.Diff(csiClass, class()); diff != "" {
		t.Errorf("the refused class changed:\n%s", diff)
	}
	if diff := cmp.Diff(original["ref-vsphere"], testenv.FieldsOf(getPV(t, c, "ref-vsphere"))); diff != "" {
		t.Errorf("vSphere after rewrite and undo (-original +undone):\n%s", diff)
	}

	// A CSI PV csimigrate did not create is not among the targets.
	foreign := testenv.CreateBoundPV(t, c, "ref2", "foreign", func(pv *v1.PersistentVolume) {
		pv.Spec.RBD = nil
		pv.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: "csi.vsphere.vmware.com", VolumeHandle: "b9f2e0a4-0000-4000-8000-000000000001"}
	})
	if _, stderr, code := undo("foreign"); code != cli.ExitUsage || !strings.Contains(stderr, `PV "foreign" is not a rewritten PV of the cluster`) {
		t.Errorf("a foreign CSI PV named: exit %d: %s", code, stderr)
	}
	unchanged(t, c, foreign)

	t.Run("in-use", func(t *testing.T) {
		pv := rewrittenVSphere(t, c, kc, "inuse")
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app-0", Namespace: "inuse"}, Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "app", Image: "registry.example/app:1"}},
			Volumes:    []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "inuse"}}}}}}
		if _, err := c.CoreV1().Pods("inuse").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"inuse"}, {"-online", "inuse"}} {
			out, _, code := undo(args...)
			if code != cli.ExitBlocked || !refusedWith(out, "pv/inuse", "in use by pods app-0") {
				t.Errorf("%q: exit %d:\n%s", args, code, out)
			}
		}
		unchanged(t, c, pv)
	})
	t.Run("reviewed", func(t *testing.T) {
		// A reviewed dump: only its rewritten PVs, each only while it has
		// the reviewed uid.
		a := rewrittenVSphere(t, c, kc, "rev-a")
		b := rewrittenVSphere(t, c, kc, "rev-b")
		other := rewrittenVSphere(t, c, kc, "rev-c")
		reviewed := writeJSONFile(t, asListItem(a), asListItem(b))
		if _, stderr, code := undo("-f", reviewed, "rev-c"); code != cli.ExitUsage || !strings.Contains(stderr, `PV "rev-c" is not a rewritten PV of the reviewed input`) {
			t.Errorf("a name outside the input: exit %d: %s", code, stderr)
		}
		unchanged(t, c, other)
		// rev-b replaced since the review: same name, new uid.
		deletePV(t, c, "rev-b")
		replaced := b.DeepCopy()
		replaced.UID, replaced.ResourceVersion, replaced.CreationTimestamp, replaced.ManagedFields = "", "", metav1.Time{}, nil
		b2, err := c.CoreV1().PersistentVolumes().Create(ctx, replaced, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out, _, code := undo("-f", reviewed)
		if code != cli.ExitBlocked || !refusedWith(out, "pv/rev-b", "the live PV has uid "+string(b2.UID)+", the reviewed one "+string(b.UID)) {
			t.Errorf("exit %d:\n%s", code, out)
		}
		if pv := getPV(t, c, "rev-a"); pv.Spec.VsphereVolume == nil {
			t.Errorf("rev-a was not undone: %+v", pv.Spec.PersistentVolumeSource)
		}
		unchanged(t, c, b2)
		unchanged(t, c, other)
	})
	t.Run("no-record", func(t *testing.T) {
		pv := rewrittenVSphere(t, c, kc, "norecord")
		delete(pv.Annotations, rewrite.AnnPreRewritePolicy)
		pv, err := c.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out, _, code := undo("norecord")
		if code != cli.ExitBlocked || !strings.Contains(out, "it has no annotation "+rewrite.AnnPreRewritePolicy) {
			t.Errorf("exit %d:\n%s", code, out)
		}
		unchanged(t, c, pv)
	})
}

// rewrittenVSphere creates a bound in-tree vSphere PV named ns in namespace
// ns, rewrites it and returns the CSI PV.
func rewrittenVSphere(t *testing.T, c kubernetes.Interface, kc, ns string) *v1.PersistentVolume {
	t.Helper()
	testenv.CreateBoundPV(t, c, ns, ns, func(pv *v1.PersistentVolume) {
		pv.Spec.RBD = nil
		pv.Spec.VsphereVolume = &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[ds] kubevols/" + ns + ".vmdk"}
	})
	if out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc, ns); code != cli.ExitOK {
		t.Fatalf("rewrite: exit %d: %s\n%s", code, stderr, out)
	}
	return getPV(t, c, ns)
}

// The undo's review script, run with kubectl twice, gives back the vSphere
// PV as it was stored before the rewrite.
func TestUndoScriptWithKubectl(t *testing.T) {
	c, kc := startServer(t)
	testenv.CreateBoundPV(t, c, "script", "script", func(pv *v1.PersistentVolume) {
		pv.Spec.RBD = nil
		pv.Spec.VsphereVolume = &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[ds] kubevols/script", StoragePolicyName: "gold"}
		pv.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": "kubernetes.io/vsphere-volume"}
	})
	original := testenv.FieldsOf(getPV(t, c, "script"))
	if out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc, "script"); code != cli.ExitOK {
		t.Fatalf("rewrite: exit %d: %s\n%s", code, stderr, out)
	}
	script, stderr, code := runCmd(t, "", "rewrite", "-undo", "-live", "-kubeconfig", kc)
	if code != cli.ExitOK || !strings.Contains(script, "rewrite_pv script '' Delete") {
		t.Fatalf("rewrite -undo -o script: exit %d: %s\n%s", code, stderr, script)
	}
	for range 2 {
		cmd := exec.Command("bash", "-s")
		cmd.Stdin = strings.NewReader(script)
		cmd.Env = append(os.Environ(), "KUBECTL=kubectl --kubeconfig "+kc)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the undo script: %v\n%s", err, out)
		}
	}
	if diff := cmp.Diff(original, testenv.FieldsOf(getPV(t, c, "script"))); diff != "" {
		t.Errorf("after the undo script (-original +undone):\n%s", diff)
	}
	if _, err := c.CoreV1().ConfigMaps("kube-system").Get(context.Background(), apply.StateName("script"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("state ConfigMap: %v", err)
	}
}

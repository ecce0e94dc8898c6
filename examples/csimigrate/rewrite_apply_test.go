package main

import (
	"context"
	"os"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/testenv"
)

// startServer starts a real kube-apiserver; the test fails if it cannot.
// It returns a client and the path of a kubeconfig for it.
func startServer(t *testing.T) (kubernetes.Interface, string) {
	t.Helper()
	s, err := testenv.Start(os.Stderr)
	if err != nil {
		t.Fatalf("cannot start kube-apiserver: %v", err)
	}
	t.Cleanup(s.Stop)
	kc, err := s.WriteKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	return s.Client, kc
}

func ptr[T any](v T) *T { return &v }

// endState is what must hold after a rewrite, as comparable values.
type pvState struct {
	Driver, Handle string
	Claim          string
	Policy         v1.PersistentVolumeReclaimPolicy
	Capacity       string
	Pending        bool // a reclaim-policy annotation is left
}

func endState(t *testing.T, c kubernetes.Interface, ns string, names []string) map[string]pvState {
	t.Helper()
	ctx := context.Background()
	out := map[string]pvState{}
	for _, name := range names {
		pv, err := c.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pv/%s: %v", name, err)
		}
		if pv.Spec.CSI == nil {
			t.Fatalf("pv/%s is not a CSI PV: %+v", name, pv.Spec.PersistentVolumeSource)
		}
		pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, pv.Spec.ClaimRef.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pvc.Spec.VolumeName != name || pvc.UID != pv.Spec.ClaimRef.UID {
			t.Errorf("pvc %s/%s points to %q (uid %s), PV claims uid %s", ns, pvc.Name, pvc.Spec.VolumeName, pvc.UID, pv.Spec.ClaimRef.UID)
		}
		q := pv.Spec.Capacity[v1.ResourceStorage]
		_, pending := pv.Annotations[rewrite.AnnReclaimPolicy]
		out[name[len(ns)+1:]] = pvState{Driver: pv.Spec.CSI.Driver, Handle: pv.Spec.CSI.VolumeHandle, Claim: pv.Spec.ClaimRef.Name,
			Policy: pv.Spec.PersistentVolumeReclaimPolicy, Capacity: q.String(), Pending: pending}
	}
	cms, err := c.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=csimigrate"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != 0 {
		t.Errorf("%d saved replacements left", len(cms.Items))
	}
	return out
}

func TestRewriteApplyEndToEnd(t *testing.T) {
	c, kc := startServer(t)
	ctx := context.Background()

	names := testenv.Seed(t, c, "full")
	// The plan reads the live cluster.
	out, stderr, code := runCmd(t, "", "plan", "-live", "-kubeconfig", kc, "-o", "json")
	if code != exitOK && code != exitBlocked {
		t.Fatalf("plan -live: exit %d: %s", code, stderr)
	}
	for _, n := range names {
		if !strings.Contains(out, `"name": "`+n+`"`) {
			t.Errorf("plan -live does not list %s", n)
		}
	}
	// The server-side dry run of every step is accepted and changes nothing.
	if out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-dry-run", "-kubeconfig", kc); code != exitOK {
		t.Fatalf("dry run: exit %d: %s\n%s", code, stderr, out)
	}
	if pv, _ := c.CoreV1().PersistentVolumes().Get(ctx, names[0], metav1.GetOptions{}); pv.Spec.CSI != nil || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
		t.Fatalf("the dry run changed %s", names[0])
	}
	out, stderr, code = runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc)
	if code != exitOK {
		t.Fatalf("rewrite -apply: exit %d: %s\n%s", code, stderr, out)
	}
	want := endState(t, c, "full", names)
	// The static RBD image has a handle Ceph CSI resolves elsewhere, and no
	// class to take a deletion secret from: Retain. The CephFS volume is
	// static to Ceph CSI, which never deletes it: Retain, as the plan says.
	wantPolicies := map[string]v1.PersistentVolumeReclaimPolicy{"rbd": "Delete", "rbd-static": "Retain", "cephfs": "Retain", "vsphere": "Delete"}
	for k, s := range want {
		if s.Policy != wantPolicies[k] || s.Pending || s.Capacity != "1Gi" || s.Claim != k {
			t.Errorf("%s: %+v", k, s)
		}
	}
	// A second run changes nothing.
	if out, _, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc); code != exitOK || !strings.Contains(out, ", 0 steps taken") {
		t.Fatalf("second run: exit %d:\n%s", code, out)
	}
}

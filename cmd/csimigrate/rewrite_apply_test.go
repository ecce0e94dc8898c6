package main

import (
	"context"
	"os"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
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

func TestRewriteApplyEndToEnd(t *testing.T) {
	c, kc := startServer(t)
	ctx := context.Background()

	names := testenv.Seed(t, c, "full")
	// The plan reads the live cluster.
	out, stderr, code := runCmd(t, "", "plan", "-live", "-kubeconfig", kc, "-o", "json")
	if code != cli.ExitOK && code != cli.ExitBlocked {
		t.Fatalf("plan -live: exit %d: %s", code, stderr)
	}
	for _, n := range names {
		if !strings.Contains(out, `"name": "`+n+`"`) {
			t.Errorf("plan -live does not list %s", n)
		}
	}
	// The server-side dry run of every step is accepted and changes nothing.
	if out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-dry-run", "-kubeconfig", kc); code != cli.ExitOK {
		t.Fatalf("dry run: exit %d: %s\n%s", code, stderr, out)
	}
	if pv, _ := c.CoreV1().PersistentVolumes().Get(ctx, names[0], metav1.GetOptions{}); pv.Spec.CSI != nil || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
		t.Fatalf("the dry run changed %s", names[0])
	}
	out, stderr, code = runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc)
	if code != cli.ExitOK {
		t.Fatalf("rewrite -apply: exit %d: %s\n%s", code, stderr, out)
	}
	want := testenv.RewrittenStates(t, c, "full", names)
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
	if out, _, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc); code != cli.ExitOK || !strings.Contains(out, ", 0 steps taken") {
		t.Fatalf("second run: exit %d:\n%s", code, out)
	}
}

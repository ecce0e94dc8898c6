package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runScript prints the rewrite script for the live cluster's in-tree PVs
// named and runs it with kubectl against the test server.
func runScript(t *testing.T, kc string, names ...string) (string, error) {
	return runScriptChecked(t, kc, nil, names...)
}

// runScriptChecked is runScript; check, when set, sees the script first.
func runScriptChecked(t *testing.T, kc string, check func(script string), names ...string) (string, error) {
	t.Helper()
	// The script is built from the live objects, as an admin does with
	// kubectl get -o json | csimigrate rewrite -f -.
	get := exec.Command("kubectl", append([]string{"--kubeconfig", kc, "get", "-o", "json", "pv"}, names...)...)
	var pvs bytes.Buffer
	get.Stdout, get.Stderr = &pvs, os.Stderr
	if err := get.Run(); err != nil {
		t.Fatalf("kubectl get: %v", err)
	}
	script, stderr, code := runCmd(t, pvs.String(), "rewrite", "-f", "-")
	if code != exitOK {
		t.Fatalf("rewrite: exit %d: %s", code, stderr)
	}
	if check != nil {
		check(script)
	}
	path := filepath.Join(t.TempDir(), "rewrite.sh")
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", path)
	cmd.Env = append(os.Environ(), "KUBECTL=kubectl --kubeconfig "+kc)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The script rewrite prints for review does what -apply does to a PV, and
// stops at a PV held by a finalizer it does not know, leaving it as it was.
func TestRewriteScriptWithKubectl(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("kubectl (Debian's kubectl package) is needed to run the script: %v", err)
	}
	c, kc := startServer(t)
	ctx := context.Background()
	mkPV(t, c, "script", "script-ok", nil)
	out, err := runScriptChecked(t, kc, func(script string) {
		if !strings.Contains(script, "no provisioner secret is known") {
			t.Error("the script does not say why the policy stays Retain")
		}
	}, "script-ok")
	if err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
	pv := getPV(t, c, "script-ok")
	// An RBD PV without a StorageClass has no known deletion secret: the
	// script keeps Retain, as -apply does, and says why.
	if pv.Spec.CSI == nil || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Name != "script-ok" {
		t.Errorf("after the script: %+v", pv.Spec)
	}
	held := mkPV(t, c, "script", "script-held", func(pv *v1.PersistentVolume) { pv.Finalizers = append(pv.Finalizers, "example.com/hold") })
	out, err = runScript(t, kc, "script-held")
	if err == nil || !strings.Contains(out, "script-held has finalizer example.com/hold") {
		t.Errorf("the script went on: %v\n%s", err, out)
	}
	unchanged(t, c, held)
	if _, err := c.CoreV1().PersistentVolumeClaims("script").Get(ctx, "script-held", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
}

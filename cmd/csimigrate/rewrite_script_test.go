package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
)

// runScriptChecked prints the rewrite script for the live cluster's
// in-tree PVs and runs it with kubectl against the test server; check,
// when set, sees the script first (and may change the cluster after the
// review, before the script runs).
func runScriptChecked(t *testing.T, kc string, check func(script string)) (string, error) {
	t.Helper()
	// The script is built from the live objects, as the README's admin
	// does: csimigrate dump > cluster.json; csimigrate rewrite -f cluster.json.
	dump, stderr, code := runCmd(t, "", "dump", "-kubeconfig", kc)
	if code != cli.ExitOK {
		t.Fatalf("dump: exit %d: %s", code, stderr)
	}
	script, stderr, code := runCmd(t, dump, "rewrite", "-f", "-")
	if code != cli.ExitOK {
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
	testenv.CreateBoundPV(t, c, "script", "script-ok", nil)
	out, err := runScriptChecked(t, kc, func(script string) {
		if !strings.Contains(script, "the PV names no StorageClass") {
			t.Error("the script does not say why the policy stays Retain")
		}
	})
	if err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
	pv := getPV(t, c, "script-ok")
	// An RBD PV without a StorageClass has no known deletion secret: the
	// script keeps Retain, as -apply does, and says why.
	if pv.Spec.CSI == nil || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Name != "script-ok" {
		t.Errorf("after the script: %+v", pv.Spec)
	}
	// A finalizer added after the review: the review had the PV's steps,
	// and the script, which reads the PV first, stops there.
	testenv.CreateBoundPV(t, c, "script", "script-held", nil)
	var held *v1.PersistentVolume
	out, err = runScriptChecked(t, kc, func(script string) {
		if !strings.Contains(script, "rewrite_pv script-held ") {
			t.Errorf("the review has no steps for script-held:\n%s", script)
		}
		pv := getPV(t, c, "script-held")
		pv.Finalizers = append(pv.Finalizers, "example.com/hold")
		var err error
		if held, err = c.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	if err == nil || !strings.Contains(out, "script-held has finalizer example.com/hold") {
		t.Errorf("the script went on: %v\n%s", err, out)
	}
	unchanged(t, c, held)
	if _, err := c.CoreV1().PersistentVolumeClaims("script").Get(ctx, "script-held", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
}

// The review script replaces the in-tree StorageClasses after the PVs, as
// -apply does: the class is the CSI one afterwards (default-class
// annotation kept), a second run changes nothing, and a class replaced
// since the review (another uid) is left alone.
func TestRewriteScriptStorageClasses(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("kubectl (Debian's kubectl package) is needed to run the script: %v", err)
	}
	c, kc := startServer(t)
	ctx := context.Background()
	sc, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "gold",
		Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}}, Provisioner: "kubernetes.io/vsphere-volume",
		Parameters: map[string]string{"storagepolicyname": "gold", "diskformat": "thin"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dump, stderr, code := runCmd(t, "", "dump", "-kubeconfig", kc)
	if code != cli.ExitOK {
		t.Fatalf("dump: exit %d: %s", code, stderr)
	}
	script, stderr, code := runCmd(t, dump, "rewrite", "-f", "-")
	if code != cli.ExitOK || !strings.Contains(script, "rewrite_sc gold kubernetes.io/vsphere-volume csi.vsphere.vmware.com "+string(sc.UID)) {
		t.Fatalf("exit %d: %s\n%s", code, stderr, script)
	}
	yamlOut, _, _ := runCmd(t, dump, "rewrite", "-o", "yaml", "-f", "-")
	if !strings.Contains(yamlOut, "kind: StorageClass") || !strings.Contains(yamlOut, "provisioner: csi.vsphere.vmware.com") {
		t.Errorf("-o yaml does not show the class replacement:\n%s", yamlOut)
	}
	path := filepath.Join(t.TempDir(), "rewrite.sh")
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	run := func() (string, error) {
		cmd := exec.Command("bash", path)
		cmd.Env = append(os.Environ(), "KUBECTL=kubectl --kubeconfig "+kc)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(); err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
	got, err := c.StorageV1().StorageClasses().Get(ctx, "gold", metav1.GetOptions{})
	if err != nil || got.Provisioner != "csi.vsphere.vmware.com" || got.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" || got.Parameters["csimigration"] != "true" {
		t.Fatalf("after the script: %v %+v", err, got)
	}
	if out, err := run(); err != nil {
		t.Fatalf("second run: %v\n%s", err, out)
	}
	if again, _ := c.StorageV1().StorageClasses().Get(ctx, "gold", metav1.GetOptions{}); again.ResourceVersion != got.ResourceVersion {
		t.Error("the second run changed the class")
	}
	// Replaced since the review by another in-tree class of the same name.
	if err := c.StorageV1().StorageClasses().Delete(ctx, "gold", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	other, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "gold"}, Provisioner: "kubernetes.io/vsphere-volume"}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run(); err == nil || !strings.Contains(out, "not the reviewed object") {
		t.Errorf("the script replaced a class it did not review: %v\n%s", err, out)
	}
	if now, _ := c.StorageV1().StorageClasses().Get(ctx, "gold", metav1.GetOptions{}); now.ResourceVersion != other.ResourceVersion {
		t.Error("the unreviewed class was changed")
	}
}

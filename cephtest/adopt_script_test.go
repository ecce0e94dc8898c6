package cephtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// runReviewScript prints the review script of rewrite -live -adopt (its
// Ceph-side writes included) and runs it with bash, kubectl and rados; it
// returns the script and fails the test when the script fails.
func runReviewScript(t testing.TB, e *adoptEnv, args ...string) string {
	t.Helper()
	script := e.csimigrate(t, 0, append([]string{"rewrite", "-live", "-o", "script"}, args...)...)
	path := filepath.Join(t.TempDir(), "rewrite.sh")
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", path)
	cmd.Env = append(os.Environ(), "KUBECTL=kubectl --kubeconfig "+e.kc)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the review script: %v\n%s\n--- script:\n%s", err, out.String(), script)
	}
	return script
}

// The review script of an adoption (rewrite -live -adopt -o script, no
// -apply) carries every Ceph-side write as the rados commands an admin
// reviews and runs: run with bash, kubectl and rados, it adopts an RBD
// image and a CephFS subvolume as rewrite -apply -adopt does (native
// handle, journal entry written, Delete restored after it reads back); run
// again it changes nothing; the undo's script gives back the in-tree PVs
// and removes the entries.
func TestCephAdoptReviewScript(t *testing.T) {
	e := newAdoptEnv(t, "kube.script")
	image := "kubernetes-dynamic-pvc-" + NewUUID()
	before := e.image(t, "pv-script", image, "layering")
	script := runReviewScript(t, e)
	for _, want := range []string{"j_write", "J_OBJ=csi.volume." + image[len(image)-36:], "csi.imagename=" + image, "J_VERIFY=(rbd --conf"} {
		if !strings.Contains(script, want) {
			t.Errorf("the script lacks %q", want)
		}
	}
	pv := e.pv(t, "pv-script")
	j := journalOfPV(t, pv)
	if st := e.journal(t, j); st != "written" || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete || !strings.HasPrefix(pv.Spec.CSI.VolumeHandle, "0001-") {
		t.Fatalf("after the script: journal %s, policy %s, handle %s", st, pv.Spec.PersistentVolumeReclaimPolicy, pv.Spec.CSI.VolumeHandle)
	}
	rv := pv.ResourceVersion
	// Again: nothing left to do (the PV is no longer in-tree).
	runReviewScript(t, e)
	if got := e.pv(t, "pv-script"); got.ResourceVersion != rv {
		t.Errorf("the second run changed the PV (resourceVersion %s -> %s)", rv, got.ResourceVersion)
	}
	undo := runReviewScript(t, e, "-undo")
	if !strings.Contains(undo, "j_remove") && !strings.Contains(undo, "J_UNDO=1") {
		t.Errorf("the undo script does not remove the journal entry:\n%s", undo)
	}
	after := e.pv(t, "pv-script")
	if after.Spec.RBD == nil || after.Spec.RBD.RBDImage != image || after.Spec.PersistentVolumeReclaimPolicy != before.Spec.PersistentVolumeReclaimPolicy {
		t.Errorf("after the undo script: %+v", after.Spec)
	}
	if st := e.journal(t, j); st != "absent" {
		t.Errorf("the journal entry after the undo script: %s", st)
	}
}

// The same for a CephFS subvolume: the review script with -cephfs-secret
// registers it in the CephFS journal and verifies it with ceph fs
// subvolume getpath; the undo's script removes the entry.
func TestCephFSAdoptReviewScript(t *testing.T) {
	e := newCephFSAdoptEnv(t)
	path := "/volumes/" + cephfsGroup + "/kubernetes-dynamic-pvc-" + NewUUID()
	e.dirWithData(t, path, true)
	e.inTreePV(t, "pv-fsscript", path)
	e.configure(t)
	secretArg := "-cephfs-secret=" + cephfsSecretNS + "/" + cephfsSecret
	script := runReviewScript(t, &e.adoptEnv, secretArg)
	for _, want := range []string{"J_NS=csi", "J_VERIFY=(ceph --conf", "getpath myfs"} {
		if !strings.Contains(script, want) {
			t.Errorf("the script lacks %q", want)
		}
	}
	pv := e.pv(t, "pv-fsscript")
	j := journalOfPV(t, pv)
	if st := e.journal(t, j); st != "written" || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete || pv.Spec.CSI.VolumeAttributes["subvolumePath"] != path {
		t.Fatalf("after the script: journal %s, policy %s, attributes %v", st, pv.Spec.PersistentVolumeReclaimPolicy, pv.Spec.CSI.VolumeAttributes)
	}
	runReviewScript(t, &e.adoptEnv, "-undo")
	if after := e.pv(t, "pv-fsscript"); after.Spec.CephFS == nil || after.Spec.CephFS.Path != path {
		t.Errorf("after the undo script: %+v", after.Spec)
	}
	if st := e.journal(t, j); st != "absent" {
		t.Errorf("the journal entry after the undo script: %s", st)
	}
}

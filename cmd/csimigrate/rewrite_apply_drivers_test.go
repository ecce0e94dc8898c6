package main

import (
	"context"
	"os"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
)

const rookRBD, rookCephFS = "rook-ceph.rbd.csi.ceph.com", "rook-ceph.cephfs.csi.ceph.com"

// On a cluster whose Ceph CSI runs under Rook's names, the plan and the
// rewrite use them; a backend with two drivers is refused until one is
// chosen, and left as it was; the undo recognises the Rook-named PVs (on
// 1.30, which still has the in-tree plugins an undo gives the PVs back to).
func TestRewriteApplyRookDriverNames(t *testing.T) {
	s, err := testenv.StartRelease(os.Stderr, testenv.V1_30)
	if err != nil {
		t.Fatalf("cannot start kube-apiserver: %v", err)
	}
	t.Cleanup(s.Stop)
	kc, err := s.WriteKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	c, ctx := s.Client, context.Background()
	// Rook's drivers, and a cluster that still has the upstream RBD
	// driver's object: two RBD drivers.
	if err := s.InstallCSIDrivers(rookRBD, rookCephFS); err != nil {
		t.Fatal(err)
	}
	if err := c.StorageV1().CSIDrivers().Delete(ctx, plugin.CephFSDriverName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	names := testenv.Seed(t, c, "rook")
	before := map[string]*v1.PersistentVolume{}
	for _, n := range names {
		pv, err := c.CoreV1().PersistentVolumes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		before[n] = pv
	}

	p, stderr, code := planOf(t, "-live", "-kubeconfig", kc)
	if code != cli.ExitBlocked {
		t.Fatalf("plan: exit %d, want %d: %s", code, cli.ExitBlocked, stderr)
	}
	for _, v := range p.Volumes {
		got := strings.Join(codes(v), ",")
		switch v.Plugin {
		case plugin.RBDInTreePluginName:
			if v.Migratable || !strings.Contains(got, plan.FindingCSIDriverAmbiguous) {
				t.Errorf("%s: migratable %v, findings %s: want %s", v.Name, v.Migratable, got, plan.FindingCSIDriverAmbiguous)
			}
		case plugin.CephFSInTreePluginName:
			if v.Driver != rookCephFS {
				t.Errorf("%s: driver %s, want %s", v.Name, v.Driver, rookCephFS)
			}
		}
	}
	// Without a choice the RBD PVs are refused and left exactly as they were.
	out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc, "rook-rbd")
	if code != cli.ExitBlocked || !refusedWith(out, "pv/rook-rbd", "") || !strings.Contains(out, "(CSIDriverAmbiguous)") || !strings.Contains(out, "-driver kubernetes.io/rbd=DRIVER") {
		t.Fatalf("rewrite -apply of two RBD drivers: exit %d:\n%s\n%s", code, out, stderr)
	}
	if pv, err := c.CoreV1().PersistentVolumes().Get(ctx, "rook-rbd", metav1.GetOptions{}); err != nil || pv.ResourceVersion != before["rook-rbd"].ResourceVersion {
		t.Fatalf("the refused PV was changed: %v", err)
	}
	// Chosen: every PV names the cluster's driver.
	out, stderr, code = runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc, "-driver", "rbd="+rookRBD)
	if code != cli.ExitOK {
		t.Fatalf("rewrite -apply -driver: exit %d:\n%s\n%s", code, out, stderr)
	}
	want := map[string]string{"rook-rbd": rookRBD, "rook-rbd-static": rookRBD, "rook-cephfs": rookCephFS, "rook-vsphere": plugin.VSphereDriverName}
	for n, d := range want {
		pv, err := c.CoreV1().PersistentVolumes().Get(ctx, n, metav1.GetOptions{})
		if err != nil || pv.Spec.CSI == nil || pv.Spec.CSI.Driver != d || pv.UID == before[n].UID && pv.Spec.CSI == nil {
			t.Errorf("%s: %v %+v, want a CSI PV of %s", n, err, pv.Spec.PersistentVolumeSource, d)
		}
		if pv.Spec.CSI != nil && pv.Annotations[plugin.AnnProvisionedBy] != "" && pv.Annotations[plugin.AnnProvisionedBy] != d {
			t.Errorf("%s: provisioned-by %q, want %q", n, pv.Annotations[plugin.AnnProvisionedBy], d)
		}
	}
	// The undo takes them back to in-tree.
	out, stderr, code = runCmd(t, "", "rewrite", "-apply", "-undo", "-kubeconfig", kc, "-driver", "rbd="+rookRBD)
	if code != cli.ExitOK {
		t.Fatalf("undo: exit %d:\n%s\n%s", code, out, stderr)
	}
	for n := range want {
		pv, err := c.CoreV1().PersistentVolumes().Get(ctx, n, metav1.GetOptions{})
		if err != nil || plugin.InTreeNameOfPV(pv) == "" {
			t.Errorf("%s after the undo: %v %+v", n, err, pv.Spec.PersistentVolumeSource)
		}
	}
}

func codes(v plan.VolumePlan) []string {
	var out []string
	for _, f := range v.Findings {
		out = append(out, f.Code)
	}
	return out
}

// rewrite -apply checks, before its first write, that the Ceph CSI driver
// serves each volume's cluster entry where the cluster shows it reads it
// (here its manifests' config map): a volume whose entry is missing is
// refused and left as it was, and rewritten once the entry is there.
func TestRewriteApplyChecksCephEntry(t *testing.T) {
	c, kc := startServer(t)
	ctx := context.Background()
	names := testenv.Seed(t, c, "entry")
	// The manifests' config map without the volumes' entry.
	own := `[{"clusterID":"own","monitors":["10.9.9.9:6789"]}]`
	if err := testenv.SetCephCSIConfig(ctx, c, []byte(own)); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc)
	if code != cli.ExitBlocked {
		t.Fatalf("rewrite -apply without the entry: exit %d:\n%s\n%s", code, out, stderr)
	}
	for _, n := range names {
		pv, err := c.CoreV1().PersistentVolumes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ceph := pv.Spec.RBD != nil || pv.Spec.CephFS != nil
		switch {
		case ceph && !refusedWith(out, "pv/"+n, ""):
			t.Errorf("%s: not refused:\n%s", n, out)
		case ceph && pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete && n == "entry-rbd":
			t.Errorf("%s: changed before its entry exists", n)
		case !ceph && pv.Spec.CSI == nil:
			t.Errorf("%s: a volume that needs no Ceph entry was not rewritten", n)
		}
	}
	withEntry := strings.TrimSuffix(own, "]") + "," + strings.TrimPrefix(testenv.CephCSIConfig, "[")
	if err := testenv.SetCephCSIConfig(ctx, c, []byte(withEntry)); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc); code != cli.ExitOK {
		t.Fatalf("rewrite -apply with the entry: exit %d:\n%s\n%s", code, out, stderr)
	}
	testenv.RewrittenStates(t, c, "entry", names)
}

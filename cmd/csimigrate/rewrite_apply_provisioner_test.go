package main

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	provisioner "sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
)

// deletions records what the provisioner library asks a CSI provisioner to
// delete.
type deletions struct {
	mu  sync.Mutex
	pvs map[string]*v1.PersistentVolume
}

func (d *deletions) Provision(context.Context, provisioner.ProvisionOptions) (*v1.PersistentVolume, provisioner.ProvisioningState, error) {
	return nil, provisioner.ProvisioningFinished, errors.New("this test provisions nothing")
}

func (d *deletions) Delete(_ context.Context, pv *v1.PersistentVolume) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pvs[pv.Name] = pv.DeepCopy()
	return nil
}

func (d *deletions) got(name string) *v1.PersistentVolume {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pvs[name]
}

// The provisioner library external-provisioner v6 runs on
// (sig-storage-lib-external-provisioner v13) deletes a rewritten RBD volume
// once its claim is gone, through rbd.csi.ceph.com and with the deletion
// secret the rewrite recorded; the same CSI PV with the in-tree
// provisioned-by, as rewrites wrote before, is never deleted (the image
// leaked).
func TestRewrittenPVDeletedByExternalProvisioner(t *testing.T) {
	c, kc := startServer(t)
	ctx := context.Background()
	if _, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "rbd-prov"}, Provisioner: "kubernetes.io/rbd",
		Parameters: map[string]string{"monitors": "10.70.53.126:6789", "adminSecretName": "ceph-admin", "adminSecretNamespace": "ceph"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dynamic := func(pv *v1.PersistentVolume) {
		pv.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": "kubernetes.io/rbd"}
		pv.Spec.StorageClassName = "rbd-prov"
	}
	testenv.CreateBoundPV(t, c, "prov", "rewritten", dynamic)
	testenv.CreateBoundPV(t, c, "prov", "old-style", dynamic)
	if out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc, "rewritten", "old-style"); code != cli.ExitOK {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	// What rewrites wrote before: the in-tree provisioned-by kept.
	old := getPV(t, c, "old-style")
	old.Annotations["pv.kubernetes.io/provisioned-by"] = "kubernetes.io/rbd"
	if _, err := c.CoreV1().PersistentVolumes().Update(ctx, old, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The claims are deleted and the PVs released (what the PV controller
	// does; it does not run here).
	for _, name := range []string{"rewritten", "old-style"} {
		deletePVC(t, c, "prov", name)
		pv := getPV(t, c, name)
		pv.Status.Phase = v1.VolumeReleased
		if _, err := c.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rec := &deletions{pvs: map[string]*v1.PersistentVolume{}}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ctrl := provisioner.NewProvisionController(runCtx, c, "rbd.csi.ceph.com", rec, provisioner.LeaderElection(false), provisioner.ResyncPeriod(time.Second))
	go ctrl.Run(runCtx)
	deadline := time.Now().Add(30 * time.Second)
	for rec.got("rewritten") == nil && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	pv := rec.got("rewritten")
	if pv == nil {
		t.Fatal("the provisioner library never deleted the rewritten volume")
	}
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != "rbd.csi.ceph.com" ||
		pv.Annotations["volume.kubernetes.io/provisioner-deletion-secret-name"] != "ceph-admin" ||
		pv.Annotations["volume.kubernetes.io/provisioner-deletion-secret-namespace"] != "ceph" {
		t.Errorf("deleted with %+v, annotations %v", pv.Spec.CSI, pv.Annotations)
	}
	time.Sleep(3 * time.Second) // three resyncs
	if rec.got("old-style") != nil {
		t.Error("the library deleted a PV whose provisioned-by names the in-tree plugin: the control case does not hold")
	}
	if names := slices.Collect(func(yield func(string) bool) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for n := range rec.pvs {
			if !yield(n) {
				return
			}
		}
	}); len(names) != 1 {
		t.Errorf("deleted %v", names)
	}
}

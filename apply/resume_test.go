package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/rewrite"
)

// The writer interrupted after any number of writes (MaxWrites) and run
// again, on the real kube-apiserver: it ends where an uninterrupted run
// ends, and it resumes only when the cluster is provably what the saved
// replacement was built from.

// Every kind testenv.Seed makes (dynamically provisioned and static RBD,
// CephFS, vSphere), interrupted after k writes for each k, ends as the
// uninterrupted rewrite ends.
func TestWriterResumesToUninterruptedEnd(t *testing.T) {
	c := startServer(t)
	names := testenv.Seed(t, c, "full")
	w, out, err := rewritePVs(t, c, Options{}, names)
	if err != nil {
		t.Fatalf("the uninterrupted rewrite: %v\n%s", err, out)
	}
	want := testenv.RewrittenStates(t, c, "full", names)
	total := w.Writes()
	for k := 1; k < total/len(names)+2 && k < 12; k++ {
		ns := fmt.Sprintf("cut%d", k)
		names := testenv.Seed(t, c, ns)
		if _, _, err := rewritePVs(t, c, Options{MaxWrites: k}, names); !errors.Is(err, ErrWriteLimit) {
			t.Fatalf("k=%d: the interrupted run returned %v", k, err)
		}
		if _, out, err := rewritePVs(t, c, Options{}, names); err != nil {
			t.Fatalf("k=%d: resume: %v\n%s", k, err, out)
		}
		if diff := cmp.Diff(want, testenv.RewrittenStates(t, c, ns, names)); diff != "" {
			t.Errorf("k=%d: end state after an interruption (-uninterrupted +resumed):\n%s", k, diff)
		}
	}
}

// A run resumes only what its state proves: a PV changed after its
// replacement was saved, a state edited by hand, and a claim replaced by
// another of the same name are each left as they are, with nothing created.
func TestWriterResumeRefusesChangedCluster(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	interrupt := func(t *testing.T, name string, steps int) {
		t.Helper()
		if _, _, err := rewritePVs(t, c, Options{MaxWrites: steps}, []string{name}); !errors.Is(err, ErrWriteLimit) {
			t.Fatalf("the interrupted run returned %v", err)
		}
	}
	resume := func(t *testing.T, name string) error {
		_, _, err := rewritePVs(t, c, Options{}, []string{name})
		return err
	}
	t.Run("stale-state", func(t *testing.T) {
		testenv.CreateBoundPV(t, c, "stale", "stale", nil)
		interrupt(t, "stale", 2) // Retain, save
		pv := getPV(t, c, "stale")
		pv.Labels = map[string]string{"changed": "by-an-admin"}
		pv, err := c.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		err = resume(t, "stale")
		if err == nil || !strings.Contains(err.Error(), "changed after its replacement was saved in ConfigMap kube-system/"+StateName("stale")) {
			t.Fatalf("resume: %v", err)
		}
		unchanged(t, c, pv)
	})
	t.Run("hand-edited-state", func(t *testing.T) {
		testenv.CreateBoundPV(t, c, "edited", "edited", nil)
		interrupt(t, "edited", 4) // Retain, save, delete, finalizer: the PV is gone
		waitGone(t, c, "edited")
		cm, err := c.CoreV1().ConfigMaps("kube-system").Get(ctx, StateName("edited"), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data[stateKey] = strings.ReplaceAll(cm.Data[stateKey], `"1Gi"`, `"2Gi"`)
		if _, err := c.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		err = resume(t, "edited")
		if err == nil || !strings.Contains(err.Error(), "was changed after csimigrate saved it") {
			t.Fatalf("resume: %v", err)
		}
		if _, err := c.CoreV1().PersistentVolumes().Get(ctx, "edited", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a PV was created from the edited state: %v", err)
		}
	})
	t.Run("claim-rebound", func(t *testing.T) {
		testenv.CreateBoundPV(t, c, "rebound", "rebound", nil)
		interrupt(t, "rebound", 4)
		waitGone(t, c, "rebound")
		// The claim is deleted and a new one of the same name created.
		deletePVC(t, c, "rebound", "rebound")
		if _, err := c.CoreV1().PersistentVolumeClaims("rebound").Create(ctx, testenv.ClaimFor("rebound", "rebound", "rebound"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err := resume(t, "rebound")
		if err == nil || !strings.Contains(err.Error(), "claim rebound/rebound has uid") || !strings.Contains(err.Error(), "nothing is created from it") {
			t.Fatalf("resume: %v", err)
		}
		if _, err := c.CoreV1().PersistentVolumes().Get(ctx, "rebound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a PV was created for another claim: %v", err)
		}
	})
	t.Run("undo-during-rewrite", func(t *testing.T) {
		testenv.CreateBoundPV(t, c, "prog", "prog", func(pv *v1.PersistentVolume) {
			pv.Spec.RBD = nil
			pv.Spec.VsphereVolume = &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[ds] kubevols/prog.vmdk"}
		})
		interrupt(t, "prog", 5) // Retain, save, delete, finalizer, create
		pv := getPV(t, c, "prog")
		_, out, err := rewritePVs(t, c, Options{Direction: Undo}, []string{"prog"})
		var ip *InProgressError
		if !errors.As(err, &ip) || ip.Run != Rewrite || ip.Object != rewrite.PVRef("prog") || !strings.Contains(err.Error(), "holds a rewrite of pv/prog in progress; finish it first") {
			t.Errorf("undo during a rewrite: %v\n%s", err, out)
		}
		unchanged(t, c, pv)
	})
}

// An in-tree StorageClass interrupted after each write is replaced when
// the run is resumed, with no state left.
func TestWriterClassResumes(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ceph"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Secrets("ceph").Create(ctx, testenv.CephSecret("ceph", "ceph-admin", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	params := map[string]string{"monitors": "10.70.53.126:6789", "adminSecretName": "ceph-admin", "adminSecretNamespace": "ceph", "pool": "kube"}
	for k := 1; k <= 3; k++ {
		name := fmt.Sprintf("cut%d", k)
		if _, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name},
			Provisioner: "kubernetes.io/rbd", Parameters: params}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if _, err := newWriter(t, c, &out, Options{MaxWrites: k}).Classes(ctx, targetsOf([]string{name})); !errors.Is(err, ErrWriteLimit) {
			t.Fatalf("k=%d: %v\n%s", k, err, out.String())
		}
		if _, err := newWriter(t, c, &out, Options{}).Classes(ctx, targetsOf([]string{name})); err != nil {
			t.Fatalf("k=%d: resume: %v\n%s", k, err, out.String())
		}
		got, err := c.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
		if err != nil || got.Provisioner != "rbd.csi.ceph.com" {
			t.Errorf("k=%d: %v %+v", k, err, got)
		}
		if _, err := c.CoreV1().ConfigMaps("kube-system").Get(ctx, ClassStateName(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("k=%d: state left: %v", k, err)
		}
	}
}

// waitGone waits for a PV to be gone.
func waitGone(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	for range 100 {
		if _, err := c.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("pv/%s is still there", name)
}

// deletePVC deletes a claim for good (no controller-manager removes
// pvc-protection here).
func deletePVC(t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	ctx := context.Background()
	pvcs := c.CoreV1().PersistentVolumeClaims(ns)
	if err := pvcs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		pvc, err := pvcs.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if err == nil && len(pvc.Finalizers) > 0 {
			pvc.Finalizers = nil
			_, _ = pvcs.Update(ctx, pvc, metav1.UpdateOptions{})
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("pvc %s/%s is still there", ns, name)
}

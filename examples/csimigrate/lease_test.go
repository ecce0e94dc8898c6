package main

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// One writer at a time: rewrite -apply takes the Lease csimigrate-writer in
// the state namespace before its first write and gives it up after. While
// another writer holds it, a run waits -lease-wait and then refuses,
// writing nothing; a holder that stopped renewing is taken over once the
// run has seen its Lease unchanged for its duration.
func TestRewriteApplyLease(t *testing.T) {
	c, kc := startServer(t)
	ctx := context.Background()
	pv := mkPV(t, c, "lease", "lease-a", nil)
	leases := c.CoordinationV1().Leases("kube-system")
	hold := func(holder string, secs int32) {
		t.Helper()
		now := metav1.NewMicroTime(time.Now())
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: writerLeaseName, Namespace: "kube-system"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &now}}
		cur, err := leases.Get(ctx, writerLeaseName, metav1.GetOptions{})
		if err == nil {
			l.ResourceVersion = cur.ResourceVersion
			_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		} else {
			_, err = leases.Create(ctx, l, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}

	// A live holder, renewed while the run waits: refused, nothing written.
	hold("controller-0", 3600)
	start := time.Now()
	out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc, "-lease-wait", "2s", "lease-a")
	if code != exitBlocked || !strings.Contains(stderr, "holds Lease kube-system/csimigrate-writer (holder controller-0)") || time.Since(start) < 2*time.Second {
		t.Errorf("with the Lease held: exit %d after %s\n%s\n%s", code, time.Since(start), out, stderr)
	}
	if now := getPV(t, c, "lease-a"); now.ResourceVersion != pv.ResourceVersion {
		t.Error("the PV was written while another writer held the Lease")
	}

	// A holder that stopped renewing (a 1 s Lease, not renewed): taken
	// over, the PV rewritten, the Lease given up after.
	hold("crashed-writer", 1)
	out, stderr, code = runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc, "-lease-wait", "10s", "lease-a")
	if code != exitOK {
		t.Fatalf("after the holder stopped renewing: exit %d\n%s\n%s", code, out, stderr)
	}
	if now := getPV(t, c, "lease-a"); now.Spec.CSI == nil {
		t.Error("not rewritten")
	}
	l, err := leases.Get(ctx, writerLeaseName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "" {
		t.Errorf("the Lease after the run: %+v, %v; want it given up (no holder)", l, err)
	}
}

// The Lease is held while a writer runs, and a writer that loses it (another
// writer took it) has its context cancelled, so that no further write
// follows.
func TestWriterLeaseLost(t *testing.T) {
	c, _ := startServer(t)
	ctx := context.Background()
	defer func(d time.Duration) { writerLeaseDuration = d }(writerLeaseDuration)
	writerLeaseDuration = 900 * time.Millisecond // renewed every 300 ms
	runCtx, l, err := holdWriterLease(ctx, c, "kube-system", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	leases := c.CoordinationV1().Leases("kube-system")
	cur, err := leases.Get(ctx, writerLeaseName, metav1.GetOptions{})
	if err != nil || cur.Spec.HolderIdentity == nil || *cur.Spec.HolderIdentity != l.id {
		t.Fatalf("while held: %+v, %v; want holder %s", cur, err, l.id)
	}
	// A second writer waits, then refuses.
	if _, _, err := holdWriterLease(ctx, c, "kube-system", 500*time.Millisecond); err == nil || !strings.Contains(err.Error(), l.id) {
		t.Errorf("a second writer: %v; want a refusal naming the holder", err)
	}
	// Another writer takes it: the holder's next renewal conflicts.
	cur, err = leases.Get(ctx, writerLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	thief := "thief"
	cur.Spec.HolderIdentity = &thief
	if _, err := leases.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-runCtx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the writer's context is not cancelled 5 s after it lost the Lease")
	}
	l.release(ctx)
	if cur, err := leases.Get(ctx, writerLeaseName, metav1.GetOptions{}); err != nil || *cur.Spec.HolderIdentity != thief {
		t.Errorf("after release by the writer that lost it: %+v, %v; the thief's hold must stay", cur, err)
	}
}

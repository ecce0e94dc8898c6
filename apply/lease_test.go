package apply

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/translate"
)

// startServer starts etcd and kube-apiserver for a test, stopped when it
// ends.
func startServer(t *testing.T) kubernetes.Interface {
	t.Helper()
	s, err := testenv.Start(os.Stderr)
	if err != nil {
		t.Fatalf("cannot start kube-apiserver: %v", err)
	}
	t.Cleanup(s.Stop)
	return s.Client
}

// The Lease is held while a writer runs, and a writer that loses it (another
// writer took it) has its context cancelled, so that no further write
// follows.
func TestWriterLeaseLost(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	defer func(d time.Duration) { writerLeaseDuration = d }(writerLeaseDuration)
	writerLeaseDuration = 900 * time.Millisecond // renewed every 300 ms
	runCtx, l, err := HoldLease(ctx, c, "kube-system", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	leases := c.CoordinationV1().Leases("kube-system")
	cur, err := leases.Get(ctx, LeaseName, metav1.GetOptions{})
	if err != nil || cur.Spec.HolderIdentity == nil || *cur.Spec.HolderIdentity != l.id {
		t.Fatalf("while held: %+v, %v; want holder %s", cur, err, l.id)
	}
	// A second writer waits, then refuses.
	if _, _, err := HoldLease(ctx, c, "kube-system", 500*time.Millisecond); err == nil || !strings.Contains(err.Error(), l.id) {
		t.Errorf("a second writer: %v; want a refusal naming the holder", err)
	}
	// Another writer takes it: the holder's next renewal conflicts.
	thief := steal(t, c, runCtx)
	l.Release(ctx)
	if cur, err := leases.Get(ctx, LeaseName, metav1.GetOptions{}); err != nil || *cur.Spec.HolderIdentity != thief {
		t.Errorf("after release by the writer that lost it: %+v, %v; the thief's hold must stay", cur, err)
	}
}

// A Writer writes only while its Lease holds: without a Lease, and with one
// another writer has taken, its run takes no write (ErrNotHolding: the PVs
// and the state namespace stay as they were); while it holds, it rewrites.
func TestWriterWritesOnlyHoldingLease(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	defer func(d time.Duration) { writerLeaseDuration = d }(writerLeaseDuration)
	writerLeaseDuration = 900 * time.Millisecond // renewed every 300 ms
	tr, err := translate.New(translate.WithNodeExpandSecret(false))
	if err != nil {
		t.Fatal(err)
	}
	refused := func(ns string, lease Holder) {
		t.Helper()
		names := testenv.Seed(t, c, ns)
		before := make([]*v1.PersistentVolume, len(names))
		for i, n := range names {
			before[i] = getPV(t, c, n)
		}
		var out bytes.Buffer
		w, err := New(c, tr, klog0(), textEvents{&out}, Options{StateNamespace: "kube-system", Lease: lease})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.PVs(ctx, targetsOf(names)); !errors.Is(err, ErrNotHolding) {
			t.Fatalf("%s: the run returned %v, want ErrNotHolding\n%s", ns, err, out.String())
		}
		for _, pv := range before {
			unchanged(t, c, pv)
		}
		noStateLeft(t, c)
	}
	refused("nolease", nil)

	runCtx, l, err := HoldLease(ctx, c, "kube-system", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	names := testenv.Seed(t, c, "held")
	if _, out, err := rewritePVs(t, c, Options{Lease: l}, names); err != nil {
		t.Fatalf("holding the Lease: %v\n%s", err, out)
	}
	for _, n := range names {
		if pv := getPV(t, c, n); pv.Spec.CSI == nil {
			t.Errorf("pv/%s not rewritten while holding the Lease", n)
		}
	}

	steal(t, c, runCtx)
	if l.Holding() {
		t.Fatal("the Lease reports holding after another writer took it")
	}
	refused("lost", l)
	l.Release(ctx)
}

// steal has another writer take the Lease and waits for the holder's
// context (runCtx) to end, as its next renewal conflicts; it returns the
// thief's identity.
func steal(t *testing.T, c kubernetes.Interface, runCtx context.Context) string {
	t.Helper()
	ctx := context.Background()
	leases := c.CoordinationV1().Leases("kube-system")
	thief := "thief"
	// The holder renews meanwhile (every third of its duration): the
	// thief reads again on a conflict, as a leader elector does.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := leases.Get(ctx, LeaseName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.HolderIdentity = &thief
		_, err = leases.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-runCtx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the writer's context is not cancelled 5 s after it lost the Lease")
	}
	return thief
}

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
)

// One writer at a time: rewrite -apply takes the Lease csimigrate-writer in
// the state namespace before its first write and gives it up after. While
// another writer holds it, a run waits -lease-wait and then refuses,
// writing nothing; a holder that stopped renewing is taken over once the
// run has seen its Lease unchanged for its duration.
func TestRewriteApplyLease(t *testing.T) {
	c, kc := startServer(t)
	ctx := context.Background()
	pv := testenv.CreateBoundPV(t, c, "lease", "lease-a", nil)
	leases := c.CoordinationV1().Leases("kube-system")
	hold := func(holder string, secs int32) {
		t.Helper()
		now := metav1.NewMicroTime(time.Now())
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: apply.LeaseName, Namespace: "kube-system"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &now}}
		cur, err := leases.Get(ctx, apply.LeaseName, metav1.GetOptions{})
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

	// A live holder: the dry run says the real run would wait for it, and
	// takes no Lease; the real run waits, then refuses, nothing written.
	hold("controller-0", 3600)
	// The plan says a writer is running.
	if out, _, _ := runCmd(t, "", "plan", "-live", "-kubeconfig", kc); !strings.Contains(out, "WriterRunning") || !strings.Contains(out, "a csimigrate writer (controller-0) holds the writer Lease") {
		t.Errorf("plan -live with the Lease held:\n%s", out)
	}
	out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-dry-run", "-kubeconfig", kc, "-lease-wait", "2s", "lease-a")
	if code != cli.ExitOK || !strings.Contains(out, "the writer Lease kube-system/csimigrate-writer is held by controller-0: the real run would wait up to 2s") {
		t.Errorf("dry run with the Lease held: exit %d\n%s\n%s", code, out, stderr)
	}
	start := time.Now()
	out, stderr, code = runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc, "-lease-wait", "2s", "lease-a")
	if code != cli.ExitBlocked || !strings.Contains(stderr, "holds Lease kube-system/csimigrate-writer (holder controller-0)") || time.Since(start) < 2*time.Second {
		t.Errorf("with the Lease held: exit %d after %s\n%s\n%s", code, time.Since(start), out, stderr)
	}
	if now := getPV(t, c, "lease-a"); now.ResourceVersion != pv.ResourceVersion {
		t.Error("the PV was written while another writer held the Lease")
	}

	// Interrupted (SIGINT, as Ctrl-C sends it) while it waits: it says so,
	// and nothing is written.
	if bin := os.Getenv("CSIMIGRATE_BIN"); bin == "" {
		t.Error("CSIMIGRATE_BIN is not set: scripts/test builds the command for this test")
	} else {
		cmd := exec.Command(bin, "rewrite", "-apply", "-kubeconfig", kc, "-lease-wait", "60s", "lease-a")
		var outb, errb lockedBuffer // written by exec's copying goroutines while polled here
		cmd.Stdout, cmd.Stderr = &outb, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(outb.String(), "waiting for the writer Lease") && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		_ = cmd.Process.Signal(os.Interrupt)
		err := cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != cli.ExitBlocked || !strings.Contains(errb.String(), "interrupted while waiting for the writer Lease: nothing was written") {
			t.Errorf("interrupted: %v, exit %d\n%s\n%s", err, code, outb.String(), errb.String())
		}
		if now := getPV(t, c, "lease-a"); now.ResourceVersion != pv.ResourceVersion {
			t.Error("the interrupted run wrote the PV")
		}
	}

	// A holder that stopped renewing (a 1 s Lease, not renewed): taken
	// over, the PV rewritten, the Lease given up after.
	hold("crashed-writer", 1)
	out, stderr, code = runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc, "-lease-wait", "10s", "lease-a")
	if code != cli.ExitOK {
		t.Fatalf("after the holder stopped renewing: exit %d\n%s\n%s", code, out, stderr)
	}
	// It said at once what it waited for, and for how long.
	if !strings.Contains(out, "waiting for the writer Lease kube-system/csimigrate-writer, held by crashed-writer: taken over in ") {
		t.Errorf("the wait for a stale Lease was silent:\n%s", out)
	}
	if now := getPV(t, c, "lease-a"); now.Spec.CSI == nil {
		t.Error("not rewritten")
	}
	l, err := leases.Get(ctx, apply.LeaseName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "" {
		t.Errorf("the Lease after the run: %+v, %v; want it given up (no holder)", l, err)
	}
}

// lockedBuffer is a bytes.Buffer safe to write from one goroutine while
// another reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

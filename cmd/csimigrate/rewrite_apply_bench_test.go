package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
)

// benchPVs is how many bound RBD PVs the rewrite benchmark seeds
// (CSIMIGRATE_BENCH_PVS, default 10,000).
func benchPVs() int {
	if n, err := strconv.Atoi(os.Getenv("CSIMIGRATE_BENCH_PVS")); err == nil && n > 0 {
		return n
	}
	return 10000
}

// seedMany creates n bound in-tree RBD PVs with their claims in namespace
// ns, 32 at a time.
func seedMany(b *testing.B, c kubernetes.Interface, ns string, n int) {
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	testenv.EnsureSecrets(b, c, testenv.BoundPV(ns, ns, ns, "", testenv.RBDSource(ns, ns))) // one secret for all
	var wg sync.WaitGroup
	errs := make(chan error, n)
	work := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				name := fmt.Sprintf("%s-%06d", ns, i)
				pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, testenv.ClaimFor(ns, name, name), metav1.CreateOptions{})
				if err != nil {
					errs <- err
					continue
				}
				pv, err := c.CoreV1().PersistentVolumes().Create(ctx, testenv.BoundPV(name, ns, name, pvc.UID, testenv.RBDSource(ns, name)), metav1.CreateOptions{})
				if err != nil {
					errs <- err
					continue
				}
				// Bound, as kube-controller-manager leaves them (none runs
				// here): the writer waits for a binding in flight.
				pv.Status.Phase = v1.VolumeBound
				if _, err := c.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
					errs <- err
					continue
				}
				pvc.Status = v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, AccessModes: pvc.Spec.AccessModes, Capacity: pv.Spec.Capacity}
				if _, err := c.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// BenchmarkRewriteApply rewrites benchPVs() bound RBD PVs on the test
// kube-apiserver (etcd on the same machine) with rewrite -apply's
// concurrency (CSIMIGRATE_BENCH_CONCURRENCY, default 8) and rate limit
// raised to what the test server takes, and reports the time of the whole
// rewrite, of plan -live over the same cluster, and of the API server's
// floor: the same seven writes a PV sent directly by as many goroutines
// (floorWrites), with their ratio as x-floor. Run with -benchtime 1x.
func BenchmarkRewriteApply(b *testing.B) {
	s, err := testenv.Start(os.Stderr)
	if err != nil {
		b.Fatalf("cannot start kube-apiserver: %v", err)
	}
	b.Cleanup(s.Stop)
	n := benchPVs()
	fast := rest.CopyConfig(s.Config)
	fast.QPS, fast.Burst = 5000, 5000
	c, err := kubernetes.NewForConfig(fast)
	if err != nil {
		b.Fatal(err)
	}
	kc, err := s.WriteKubeconfig()
	if err != nil {
		b.Fatal(err)
	}
	conc := envInt("CSIMIGRATE_BENCH_CONCURRENCY", 8)
	var cm cli.Common
	tr, err := cm.Translator()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		floorNS := fmt.Sprintf("floor%d", i)
		seedMany(b, c, floorNS, n)
		start := time.Now()
		floorWrites(b, c, tr, floorNS, n, conc)
		floor := time.Since(start)
		b.Logf("the floor: %d PVs' seven writes in %s", n, floor.Round(time.Millisecond))
		ns := fmt.Sprintf("bench%d", i)
		start = time.Now()
		seedMany(b, c, ns, n)
		b.Logf("seeded %d PVs and claims in %s", n, time.Since(start).Round(time.Millisecond))
		var out, stderr bytes.Buffer
		start = time.Now()
		code := run([]string{"plan", "-live", "-kubeconfig", kc, "-o", "json"}, nil, &out, &stderr)
		b.Logf("plan -live over %d PVs: %s (exit %d)", n, time.Since(start).Round(time.Millisecond), code)
		if code != cli.ExitOK && code != cli.ExitBlocked {
			b.Fatalf("plan: %s", stderr.String())
		}
		out.Reset()
		stderr.Reset()
		b.StartTimer()
		start = time.Now()
		code = run([]string{"rewrite", "-apply", "-kubeconfig", kc, "-concurrency", strconv.Itoa(conc), "-qps", "5000", "-burst", "5000"}, nil, &out, &stderr)
		el := time.Since(start)
		b.StopTimer()
		if code != cli.ExitOK {
			b.Fatalf("rewrite: exit %d: %s", code, stderr.String())
		}
		b.Logf("rewrite -apply of %d PVs: %s (%.0f PVs/s)", n, el.Round(time.Millisecond), float64(n)/el.Seconds())
		b.ReportMetric(el.Seconds(), "s/rewrite")
		b.ReportMetric(floor.Seconds(), "s/floor")
		b.ReportMetric(el.Seconds()/floor.Seconds(), "x-floor")
	}
}

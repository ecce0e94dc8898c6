package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/controller"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// envInt is an integer from the environment, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkControllerConverge times the controller (in this process, as
// leader, with its Events sent to the API server) converging
// CSIMIGRATE_BENCH_CONTROLLER_PVS (default 1,000) bound in-tree RBD PVs on the
// test kube-apiserver, with CSIMIGRATE_BENCH_WORKERS workers (default 8), and
// the API server's floor for the same object writes: the seven writes of each
// PV's rewrite (Retain, save, delete, unprotect, create, restore, remove the
// state) sent directly by as many goroutines, with one read and no checks or
// Events. It reports the ratio of the two as x-floor, and the controller's
// requests per PV (its Events not counted).
// CSIMIGRATE_BENCH_NO_EVENTS=1 sends no Events, to measure what they cost.
// Run with -benchtime 1x.
func BenchmarkControllerConverge(b *testing.B) {
	s, err := testenv.Start(os.Stderr)
	if err != nil {
		b.Fatalf("cannot start kube-apiserver: %v", err)
	}
	b.Cleanup(s.Stop)
	n, workers := envInt("CSIMIGRATE_BENCH_CONTROLLER_PVS", 1000), envInt("CSIMIGRATE_BENCH_WORKERS", 8)
	fast := rest.CopyConfig(s.Config)
	fast.QPS, fast.Burst = 5000, 5000
	fast.WarningHandler = rest.NoWarnings{}
	c, err := kubernetes.NewForConfig(fast)
	if err != nil {
		b.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(fast)
	if err != nil {
		b.Fatal(err)
	}
	applyManifests(b, dyn)
	var cm cli.Common
	tr, err := cm.Translator()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.StorageV1().CSIDrivers().Create(context.Background(), &storageCSIDriver, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// The floor: the same writes, sent directly.
		floorNS := fmt.Sprintf("floor%d", i)
		seedMany(b, c, floorNS, n)
		start := time.Now()
		floorWrites(b, c, tr, floorNS, n, workers)
		floor := time.Since(start)

		ns := fmt.Sprintf("ctl%d", i)
		seedMany(b, c, ns, n)
		ctx, cancel := context.WithCancel(context.Background())
		broadcaster := record.NewBroadcaster(record.WithContext(ctx))
		broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.CoreV1().Events("")})
		var rec record.EventRecorder = broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "csimigrate-controller"})
		if os.Getenv("CSIMIGRATE_BENCH_NO_EVENTS") != "" {
			rec = &record.FakeRecorder{} // what Events cost: none sent
		}
		reg := prometheus.NewRegistry()
		m, err := controller.NewMetrics(reg)
		if err != nil {
			b.Fatal(err)
		}
		counted := rest.CopyConfig(fast)
		var reqs requestCounter
		counted.Wrap(reqs.wrap)
		cc, err := kubernetes.NewForConfig(counted)
		if err != nil {
			b.Fatal(err)
		}
		// The writer Lease, as the command's leader election takes it
		// (through the uncounted client: its renewals are not the
		// controller's requests).
		_, lease, err := apply.HoldLease(ctx, c, apply.DefaultStateNamespace, 30*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		ctrl, err := controller.New(cc, dyn, tr, cli.Klog0(), rec, m, controller.Options{Workers: workers, StatusEvery: time.Second, Writer: apply.Options{Lease: lease}})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start = time.Now()
		done := make(chan error, 1)
		go func() { done <- ctrl.Run(ctx) }()
		// Converged: the controller counts every PV rewritten (read from
		// its metrics, which loads the API server with no lists while it
		// works), then no in-tree PV and no state is left; within a
		// deadline far above the measured pace (a PV in about 12 ms).
		deadline := time.Minute + time.Duration(n)*100*time.Millisecond
		for limit := time.Now().Add(deadline); ; {
			done := rewritesCounted(b, reg)
			if done >= n {
				break
			}
			if time.Now().After(limit) {
				b.Fatalf("after %s: the controller counted %d of %d PVs rewritten", deadline, done, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
		eventually(b, 30*time.Second, func() error {
			left, err := inTreeLeft(c, ns)
			if err != nil || left > 0 {
				return fmt.Errorf("waiting for the controller to converge: %d of %d PVs left in-tree (%v)", left, n, err)
			}
			cms, err := c.CoreV1().ConfigMaps("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=csimigrate"})
			if err != nil || len(cms.Items) > 0 {
				return fmt.Errorf("waiting for the controller's state to go: %d state ConfigMaps left (%v)", len(cms.Items), err)
			}
			return nil
		})
		el := time.Since(start)
		b.StopTimer()
		cancel()
		<-done
		lease.Release(context.Background())
		broadcaster.Shutdown()
		b.Logf("controller converged %d PVs in %s (%.0f PVs/s, %d workers); the floor for the same 7 writes a PV: %s (%.0f PVs/s): %.1fx",
			n, el.Round(time.Millisecond), float64(n)/el.Seconds(), workers, floor.Round(time.Millisecond), float64(n)/floor.Seconds(), el.Seconds()/floor.Seconds())
		b.Logf("the controller's requests: %s", reqs.String())
		b.ReportMetric(float64(reqs.total())/float64(n), "requests/pv")
		b.ReportMetric(el.Seconds()/floor.Seconds(), "x-floor")
		b.ReportMetric(el.Seconds(), "s/converge")
		b.ReportMetric(floor.Seconds(), "s/floor")
	}
}

var storageCSIDriver = storageCSIDriverFor("rbd.csi.ceph.com")

// rewritesCounted is the controller's count of PVs it rewrote
// (csimigrate_rewrites_total{kind="pv"}) in reg.
func rewritesCounted(b *testing.B, reg *prometheus.Registry) int {
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "csimigrate_rewrites_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == "pv" {
					return int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return 0
}

// inTreeLeft counts the PVs of a namespace's claims that are not yet
// rewritten (in-tree, or with their reclaim policy not yet restored).
func inTreeLeft(c kubernetes.Interface, ns string) (int, error) {
	list, err := c.CoreV1().PersistentVolumes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	left := 0
	for _, pv := range list.Items {
		if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Namespace != ns {
			continue
		}
		if pv.Spec.CSI == nil || pv.Annotations[rewrite.AnnReclaimPolicy] != "" {
			left++
		}
	}
	return left, nil
}

// floorWrites sends, for each of the n seeded PVs, the seven writes of its
// rewrite without reads or checks, workers at a time; the PVs it creates
// are the CSI PVs of tr's translation.
func floorWrites(b *testing.B, c kubernetes.Interface, tr *translate.Translator, ns string, n, workers int) {
	ctx := context.Background()
	work := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := floorOne(ctx, c, tr, fmt.Sprintf("%s-%06d", ns, i)); err != nil {
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

func floorOne(ctx context.Context, c kubernetes.Interface, tr *translate.Translator, name string) error {
	pvs := c.CoreV1().PersistentVolumes()
	// One read for the resourceVersion the update carries.
	pv, err := pvs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pv.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
	if pv, err = pvs.Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		return err
	}
	state, _ := json.Marshal(pv)
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "floor-" + name, Namespace: "kube-system"}, Data: map[string]string{"state.json": string(state)}}
	if _, err := c.CoreV1().ConfigMaps("kube-system").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := pvs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	if _, err := pvs.Patch(ctx, name, types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{}); err != nil {
		return err
	}
	// The CSI PV, as the controller creates it: the floor's PVs are then
	// not in-tree, and the controller leaves them alone.
	repl, err := tr.TranslateInTreePVToCSI(cli.Klog0(), pv)
	if err != nil {
		return err
	}
	repl.ResourceVersion, repl.UID, repl.Finalizers = "", "", nil
	created, err := pvs.Create(ctx, repl, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimDelete
	if _, err := pvs.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return c.CoreV1().ConfigMaps("kube-system").Delete(ctx, cm.Name, metav1.DeleteOptions{})
}

// requestCounter counts a client's requests by method and resource.
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (rc *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
		res := ""
		for i := len(parts) - 1; i >= 0; i-- {
			if p := parts[i]; p == "persistentvolumes" || p == "persistentvolumeclaims" || p == "configmaps" || p == "pods" || p == "secrets" ||
				p == "storageclasses" || p == "events" || p == "volumeattachments" || p == "csidrivers" || p == "leases" || p == "csinodes" {
				res = p
				break
			}
		}
		if res == "" {
			res = req.URL.Path
		}
		verb := req.Method
		if req.URL.Query().Get("watch") == "true" {
			verb = "WATCH"
		}
		rc.mu.Lock()
		if rc.n == nil {
			rc.n = map[string]int{}
		}
		rc.n[verb+" "+res]++
		rc.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

func (rc *requestCounter) total() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	t := 0
	for _, v := range rc.n {
		t += v
	}
	return t
}

func (rc *requestCounter) String() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	keys := slices.Sorted(maps.Keys(rc.n))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, rc.n[k])
	}
	return b.String()
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

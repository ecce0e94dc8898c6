package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/controller"
	"github.com/csimigrate/csimigrate/plugin"
)

// BenchmarkControllerScale is the controller on a cluster as large ones
// are: CSIMIGRATE_BENCH_SCALE_PVS (default 20,000) CSI PVs of Ceph CSI, as
// external-provisioner makes them, each bound to a claim, a pod for every
// second one, and one in-tree RBD PV with its claim for every 120 of them
// (at least 5). The shipped controller runs as its own process with the
// kustomize base's arguments (controller -dry-run -state-namespace
// kube-system) and reports its peak RSS (VmHWM, from /proc) and the time
// until it has counted every in-tree PV (its informers synced, its
// gauges set); then plan -live's time and peak RSS on the same cluster, and
// the controller migrating the in-tree PVs against the floor. CI runs it
// small (scripts/test), docs/performance.md gives the figures at the
// documented sizes.
func BenchmarkControllerScale(b *testing.B) {
	bin := os.Getenv("CSIMIGRATE_BIN")
	if bin == "" {
		b.Fatal("CSIMIGRATE_BIN: the command's binary (scripts/test builds it)")
	}
	n := envInt("CSIMIGRATE_BENCH_SCALE_PVS", 20000)
	inTree := max(n/120, 5)
	s, err := testenv.Start(os.Stderr)
	if err != nil {
		b.Fatalf("cannot start kube-apiserver: %v", err)
	}
	b.Cleanup(s.Stop)
	kc, err := s.WriteKubeconfig()
	if err != nil {
		b.Fatal(err)
	}
	statusCRD(b, s)
	start := time.Now()
	seedScale(b, s.Config, n, inTree)
	b.Logf("seeded %d CSI PVs and claims, %d pods, %d in-tree PVs in %s", n, n/2, inTree, time.Since(start).Round(time.Second))
	b.ResetTimer()
	for i := range b.N {
		rss, synced, counted := runScaleController(b, bin, kc, inTree, true)
		b.ReportMetric(float64(rss)/(1<<20), "MiB-peak-RSS")
		b.ReportMetric(synced.Seconds(), "s-to-sync")
		b.ReportMetric(counted.Seconds(), "s-to-count")
		b.ReportMetric(float64(rss)/float64(n+inTree), "B-RSS/PV")
		if i > 0 {
			continue // the in-tree PVs are migrated by the first round
		}
		b.StopTimer()
		api := fastClient(b, s.Config)
		beforePlan := apiRequests(b, api)
		planned, planRSS := scalePlanLive(b, bin, kc)
		reportRequests(b, "plan-live", apiRequests(b, api), beforePlan, n+inTree)
		b.StartTimer()
		b.ReportMetric(planned.Seconds(), "s-plan-live")
		b.ReportMetric(float64(planRSS)/(1<<20), "MiB-plan-live")
		// The convergence against the floor: the same seven writes a PV
		// sent directly for as many PVs seeded beside, then the controller
		// (not a dry run) migrating the in-tree PVs of the large cluster.
		b.StopTimer()
		floor, before, floorReqs := scaleFloor(b, s.Config, inTree)
		b.StartTimer()
		rss, synced, done := runScaleController(b, bin, kc, inTree, false)
		converged := done - synced
		b.StopTimer()
		after := apiRequests(b, fastClient(b, s.Config))
		b.StartTimer()
		reportRequests(b, "floor", floorReqs, before, inTree)
		reportRequests(b, "controller", after, floorReqs, inTree)
		reportEvents(b, fastClient(b, s.Config))
		b.ReportMetric(float64(rss)/(1<<20), "MiB-peak-RSS-converging")
		b.ReportMetric(converged.Seconds(), "s-to-converge")
		b.ReportMetric(floor.Seconds(), "s-floor")
		b.ReportMetric(converged.Seconds()/floor.Seconds(), "x-floor")
		b.Logf("%d in-tree PVs among %d: converged in %s after the informers' sync (%s from the start); the floor for the same writes: %s",
			inTree, n, converged.Round(time.Millisecond), done.Round(time.Millisecond), floor.Round(time.Millisecond))
	}
}

// statusCRD installs the base's CustomResourceDefinition of the status
// object, as a cluster that runs the controller has it: the controller
// writes its status there while it migrates.
func statusCRD(b *testing.B, s *testenv.Server) {
	b.Helper()
	dyn, err := dynamic.NewForConfig(s.Config)
	if err != nil {
		b.Fatal(err)
	}
	var crds []*unstructured.Unstructured
	for _, u := range manifestDocs(b) {
		if u.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, u)
		}
	}
	if len(crds) == 0 {
		b.Fatalf("%s has no CustomResourceDefinition", manifests)
	}
	createDocs(b, dyn, manifests, crds)
	eventually(b, 30*time.Second, func() error {
		_, err := dyn.Resource(controller.StatusResource).List(context.Background(), metav1.ListOptions{})
		return err
	})
}

// scalePlanLive runs plan -live on the large cluster, as an admin would,
// and returns its wall-clock time and peak RSS. The peak is the process's
// own VmHWM, read from /proc while it runs (the kernel's maximum resident
// set that wait4 reports counts the benchmark's own memory, which the child
// shared until its exec).
func scalePlanLive(b *testing.B, bin, kc string) (time.Duration, uint64) {
	b.Helper()
	cmd := exec.Command(bin, "plan", "-live", "-kubeconfig", kc, "-o", "json")
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var hwm uint64
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	for running := true; running; {
		select {
		case err = <-done:
			running = false
		case <-time.After(20 * time.Millisecond):
			if v, ok := vmHWM(cmd.Process.Pid); ok && v > hwm {
				hwm = v
			}
		}
	}
	took := time.Since(start)
	if ee := (*exec.ExitError)(nil); err != nil && !(errors.As(err, &ee) && ee.ExitCode() == cli.ExitBlocked) {
		b.Fatalf("plan -live: %v\n%s", err, stderr.String())
	}
	// Its own CPU time: the rest of the wall-clock time is the API
	// server's and etcd's, on the same cores.
	var cpu time.Duration
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b.Logf("plan -live of the cluster: %s, peak RSS %d MiB, its own CPU time %s", took.Round(10*time.Millisecond), hwm>>20, cpu.Round(10*time.Millisecond))
	b.ReportMetric(cpu.Seconds(), "s-plan-live-cpu")
	return took, hwm
}

// scaleFloor seeds n bound in-tree PVs in a namespace of their own and
// times the seven writes of their rewrites sent directly by 8 goroutines
// (floorWrites), on the large cluster; with the API server's request
// counts before and after those writes.
func scaleFloor(b *testing.B, base *rest.Config, n int) (time.Duration, map[string]float64, map[string]float64) {
	c := fastClient(b, base)
	var cm cli.Common
	tr, err := cm.Translator()
	if err != nil {
		b.Fatal(err)
	}
	seedMany(b, c, "floor", n)
	before := apiRequests(b, c)
	start := time.Now()
	floorWrites(b, c, tr, "floor", n, 8)
	took := time.Since(start)
	return took, before, apiRequests(b, c)
}

// fastClient is a client of base with its rate limit raised and without
// the API server's warnings (the in-tree sources' deprecation).
func fastClient(b testing.TB, base *rest.Config) kubernetes.Interface {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = 5000, 5000
	cfg.WarningHandler = rest.NoWarnings{}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// seedScale creates the benchmark's objects, 32 requests at a time.
func seedScale(b testing.TB, base *rest.Config, n, inTree int) {
	c := fastClient(b, base)
	ctx := context.Background()
	const ns = "scale"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	// The driver registered, and the Secret the in-tree PVs' rewrites
	// make Ceph CSI read: the controller checks and migrates them.
	if _, err := c.StorageV1().CSIDrivers().Create(ctx, &storageCSIDriver, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	testenv.EnsureSecrets(b, c, testenv.BoundPV("in-tree", ns, "data", "", inTreeSource(ns, "in-tree")))
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := seedOne(ctx, c, ns, i, n); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n + inTree {
		work <- i
	}
	close(work)
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}

// seedOne creates object i: a CSI PV with its claim (and a pod for every
// second one) below n, an in-tree RBD PV with its claim from n on.
func seedOne(ctx context.Context, c kubernetes.Interface, ns string, i, n int) error {
	name := fmt.Sprintf("pvc-%08d-6f1c-4b53-9a61-2b0c1d9a7e11", i)
	size := resource.MustParse("8Gi")
	class := "ceph-rbd"
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": plugin.RBDDriverName, "volume.kubernetes.io/provisioner-deletion-secret-name": "csi-rbd-secret",
			"volume.kubernetes.io/provisioner-deletion-secret-namespace": "ceph-csi"},
		Finalizers: []string{"kubernetes.io/pv-protection", "external-provisioner.volume.kubernetes.io/finalizer"}},
		Spec: v1.PersistentVolumeSpec{Capacity: v1.ResourceList{v1.ResourceStorage: size}, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete, StorageClassName: class, VolumeMode: ptr(v1.PersistentVolumeFilesystem),
			ClaimRef: &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: "data-" + strconv.Itoa(i)}}}
	if i < n {
		pv.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: plugin.RBDDriverName, FSType: "ext4",
			VolumeHandle: fmt.Sprintf("0001-0024-b7f67366-bb43-f32e-07d8-a261a7840da9-0000000000000002-%08d-6f1c-4b53-9a61-2b0c1d9a7e11", i),
			VolumeAttributes: map[string]string{"clusterID": "b7f67366bb43f32e07d8a261a7840da9", "pool": "kube", "imageFeatures": "layering",
				"imageName": fmt.Sprintf("csi-vol-%08d-6f1c-4b53-9a61-2b0c1d9a7e11", i), "journalPool": "kube", "storage.kubernetes.io/csiProvisionerIdentity": "1764547200000-8081-rbd.csi.ceph.com"},
			ControllerExpandSecretRef: &v1.SecretReference{Name: "csi-rbd-secret", Namespace: "ceph-csi"},
			NodeStageSecretRef:        &v1.SecretReference{Name: "csi-rbd-secret", Namespace: "ceph-csi"}}
	} else {
		class = ""
		pv.Spec.StorageClassName = ""
		pv.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": plugin.RBDInTreePluginName}
		pv.Finalizers = []string{"kubernetes.io/pv-protection"}
		pv.Spec.PersistentVolumeSource = inTreeSource(ns, name)
	}
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-" + strconv.Itoa(i), Namespace: ns,
		Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes",
			"volume.beta.kubernetes.io/storage-provisioner": plugin.RBDDriverName, "volume.kubernetes.io/storage-provisioner": plugin.RBDDriverName},
		Finalizers: []string{"kubernetes.io/pvc-protection"}, Labels: map[string]string{"app": "db", "app.kubernetes.io/instance": "db-" + strconv.Itoa(i%50)}},
		Spec: v1.PersistentVolumeClaimSpec{AccessModes: pv.Spec.AccessModes, StorageClassName: &class, VolumeName: name,
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: size}}}}
	// The claim first, then its PV bound to it by uid; an in-tree PV and
	// its claim then Bound, as kube-controller-manager leaves them (none
	// runs here), which the rewrite's checks read.
	claim, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	pv.Spec.ClaimRef.UID = claim.UID
	if pv, err = c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return err
	}
	if i < n {
		return seedPod(ctx, c, ns, i, claim.Name)
	}
	pv.Status.Phase = v1.VolumeBound
	if _, err := c.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		return err
	}
	claim.Status = v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, AccessModes: claim.Spec.AccessModes, Capacity: pv.Spec.Capacity}
	if _, err := c.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return nil
}

// seedPod creates the pod of CSI PV i's claim, for every second one.
func seedPod(ctx context.Context, c kubernetes.Interface, ns string, i int, claim string) error {
	if i%2 == 1 {
		return nil
	}
	pod := testenv.PodOn(ns, "db-"+strconv.Itoa(i), fmt.Sprintf("node-%03d", i%300), claim)
	pod.Labels = map[string]string{"app": "db", "app.kubernetes.io/instance": "db-" + strconv.Itoa(i%50)}
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "PGDATA", Value: "/data/pgdata"}, {Name: "POSTGRES_DB", Value: "app"}}
	pod.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("512Mi")}}
	_, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	return err
}

// inTreeSource is the volume of an in-tree RBD PV of the benchmark, as the
// in-tree provisioner made it.
func inTreeSource(ns, name string) v1.PersistentVolumeSource {
	return v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{testenv.Monitor}, RBDPool: "kube", RBDImage: "kubernetes-dynamic-" + name,
		RadosUser: "admin", FSType: "ext4", SecretRef: &v1.SecretReference{Name: "ceph-admin", Namespace: ns}}}
}

// runScaleController runs the controller with the base's arguments until
// its gauge counts every in-tree PV (dryRun), or without -dry-run until it
// has rewritten them all, and returns its peak RSS, how long its informers
// took to sync and how long it took to get there, from its start.
func runScaleController(b *testing.B, bin, kc string, inTree int, dryRun bool) (rss uint64, synced, took time.Duration) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	logPath := filepath.Join(b.TempDir(), "controller.log")
	f, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	args := []string{"controller", "-state-namespace", "kube-system", "-kubeconfig", kc, "-metrics-address", addr}
	series, want := `csimigrate_intree_persistentvolumes{plugin="kubernetes.io/rbd"}`, float64(inTree)
	if dryRun {
		args = append(args, "-dry-run")
	} else {
		// As many workers as the floor's goroutines, its rate limit
		// raised as the floor's client's (the default of 50 a second
		// spares a cluster's other clients).
		args = append(args, "-workers", "8", "-qps", "5000", "-burst", "5000")
		series = `csimigrate_rewrites_total{kind="pv"}`
	}
	// CSIMIGRATE_BENCH_SCALE_HEAP: a file to save its heap profile in
	// (after a collection) once it has counted, to see what it keeps.
	heap := os.Getenv("CSIMIGRATE_BENCH_SCALE_HEAP")
	if heap != "" {
		args = append(args, "-profiling")
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	// CSIMIGRATE_BENCH_CONTROLLER_ENV: its environment's additions
	// (space-separated NAME=VALUE), to compare settings.
	cmd.Env = append(os.Environ(), strings.Fields(os.Getenv("CSIMIGRATE_BENCH_CONTROLLER_ENV"))...)
	start := time.Now()
	if err := testenv.StartOwned(cmd); err != nil {
		b.Fatal(err)
	}
	defer stopGracefully(cmd)
	deadline := time.Now().Add(10 * time.Minute)
	for {
		// Synced: its first status pass (right after its informers'
		// sync) sets the queues' gauge.
		if synced == 0 && scrapeMetric(addr, `csimigrate_queue_depth{queue="pvs"}`) >= 0 {
			synced = time.Since(start)
		}
		if v := scrapeMetric(addr, series); v == want {
			took = time.Since(start)
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			if keep := os.Getenv("CSIMIGRATE_BENCH_SCALE_LOG"); keep != "" {
				_ = os.WriteFile(keep, log, 0o644)
			}
			b.Fatalf("the controller did not reach %s = %v within 10 minutes (%v):\n%s", series, want, scrapeMetric(addr, series), tail(string(log), 4000))
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A few more passes of its status and rechecks, then its peak.
	time.Sleep(3 * time.Second)
	rss = peakRSS(b, cmd.Process.Pid)
	// CSIMIGRATE_BENCH_SCALE_LOG: a file to copy its log to (with
	// CSIMIGRATE_BENCH_CONTROLLER_ENV=GODEBUG=gctrace=1, the collector's
	// trace: the live heap at each collection).
	if keep := os.Getenv("CSIMIGRATE_BENCH_SCALE_LOG"); keep != "" {
		if data, err := os.ReadFile(logPath); err == nil {
			_ = os.WriteFile(keep, data, 0o644)
		}
	}
	if heap != "" {
		saveHeapProfile(b, addr, heap)
	}
	return rss, synced, took
}

// stopGracefully stops the controller as Kubernetes does, with SIGTERM (it
// releases the writer Lease, so the next one need not wait for it to
// expire), and kills it after 30 s.
func stopGracefully(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// saveHeapProfile saves the heap profile the controller at addr serves,
// after a collection, in file.
func saveHeapProfile(b *testing.B, addr, file string) {
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?gc=1")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("heap profile: %v (HTTP %d)", err, resp.StatusCode)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		b.Fatal(err)
	}
}

// scrapeMetric is a metric's value at addr, -1 when it cannot be read.
func scrapeMetric(addr, series string) float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// apiRequests reads the API server's request counts
// (apiserver_request_total) by verb and resource, its own scrapes left out.
func apiRequests(b *testing.B, c kubernetes.Interface) map[string]float64 {
	b.Helper()
	raw, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatalf("reading the API server's metrics: %v", err)
	}
	out := map[string]float64{}
	for line := range strings.Lines(string(raw)) {
		labels, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(labels, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		var verb, res, sub string
		for kv := range strings.SplitSeq(labels, ",") {
			k, val, _ := strings.Cut(kv, "=")
			val = strings.Trim(val, `"`)
			switch k {
			case "verb":
				verb = val
			case "resource":
				res = val
			case "subresource":
				sub = val
			}
		}
		if sub != "" {
			res += "/" + sub
		}
		if res == "" {
			continue // /metrics itself and other non-resource paths
		}
		out[verb+" "+res] += v
	}
	return out
}

// reportRequests logs the requests the API server served between two
// scrapes, by verb and resource, and reports them per PV.
func reportRequests(b *testing.B, who string, after, before map[string]float64, perPVs int) {
	b.Helper()
	var total float64
	var lines []string
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			total += d
			lines = append(lines, fmt.Sprintf("%s %.0f", k, d))
		}
	}
	slices.Sort(lines)
	b.Logf("%s: %.0f API requests (%.1f a PV): %s", who, total, total/float64(perPVs), strings.Join(lines, ", "))
	b.ReportMetric(total/float64(perPVs), "requests/PV-"+who)
}

// reportEvents logs the controller's Events by reason and kind of object.
func reportEvents(b *testing.B, c kubernetes.Interface) {
	b.Helper()
	evs, err := c.CoreV1().Events("").List(context.Background(), metav1.ListOptions{FieldSelector: "source=csimigrate-controller"})
	if err != nil {
		b.Fatal(err)
	}
	by := map[string]int32{}
	for _, e := range evs.Items {
		by[e.Reason+" on "+e.InvolvedObject.Kind] += e.Count
	}
	b.Logf("the controller's Events (%d objects): %v", len(evs.Items), by)
}

// peakRSS is a process's peak resident set size (VmHWM), in bytes.
func peakRSS(b *testing.B, pid int) uint64 {
	v, ok := vmHWM(pid)
	if !ok {
		b.Fatalf("no VmHWM in /proc/%d/status", pid)
	}
	return v
}

// vmHWM is a running process's peak resident set size (VmHWM in
// /proc/PID/status), in bytes; ok is false when it cannot be read (the
// process has ended).
func vmHWM(pid int) (uint64, bool) {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(s), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, false
			}
			return kb << 10, true
		}
	}
	return 0, false
}

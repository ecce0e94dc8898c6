package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/csimigrate/csimigrate/apply/testenv"
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
// gauges set). CI runs it small (scripts/test), docs/performance.md gives
// the figures at the documented sizes.
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
	start := time.Now()
	seedScale(b, s.Config, n, inTree)
	b.Logf("seeded %d CSI PVs and claims, %d pods, %d in-tree PVs in %s", n, n/2, inTree, time.Since(start).Round(time.Second))
	b.ResetTimer()
	for range b.N {
		rss, synced := runScaleController(b, bin, kc, inTree)
		b.ReportMetric(float64(rss)/(1<<20), "MiB-peak-RSS")
		b.ReportMetric(synced.Seconds(), "s-to-count")
		b.ReportMetric(float64(rss)/float64(n+inTree), "B-RSS/PV")
	}
}

// seedScale creates the benchmark's objects, 32 requests at a time.
func seedScale(b testing.TB, base *rest.Config, n, inTree int) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = 5000, 5000
	cfg.WarningHandler = rest.NoWarnings{}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	const ns = "scale"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
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
		pv.Spec.RBD = &v1.RBDPersistentVolumeSource{CephMonitors: []string{testenv.Monitor}, RBDPool: "kube", RBDImage: "kubernetes-dynamic-" + name,
			RadosUser: "admin", FSType: "ext4", SecretRef: &v1.SecretReference{Name: "ceph-admin", Namespace: ns}}
	}
	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return err
	}
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-" + strconv.Itoa(i), Namespace: ns,
		Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes",
			"volume.beta.kubernetes.io/storage-provisioner": plugin.RBDDriverName, "volume.kubernetes.io/storage-provisioner": plugin.RBDDriverName},
		Finalizers: []string{"kubernetes.io/pvc-protection"}, Labels: map[string]string{"app": "db", "app.kubernetes.io/instance": "db-" + strconv.Itoa(i%50)}},
		Spec: v1.PersistentVolumeClaimSpec{AccessModes: pv.Spec.AccessModes, StorageClassName: &class, VolumeName: name,
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: size}}}}
	if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		return err
	}
	if i%2 == 1 || i >= n {
		return nil
	}
	pod := testenv.PodOn(ns, "db-"+strconv.Itoa(i), fmt.Sprintf("node-%03d", i%300), claim.Name)
	pod.Labels = map[string]string{"app": "db", "app.kubernetes.io/instance": "db-" + strconv.Itoa(i%50)}
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "PGDATA", Value: "/data/pgdata"}, {Name: "POSTGRES_DB", Value: "app"}}
	pod.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("512Mi")}}
	_, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	return err
}

// runScaleController runs the controller with the base's arguments until
// its gauge counts every in-tree PV, and returns its peak RSS and how long
// that took.
func runScaleController(b *testing.B, bin, kc string, inTree int) (rss uint64, synced time.Duration) {
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
	cmd := exec.Command(bin, "controller", "-dry-run", "-state-namespace", "kube-system", "-kubeconfig", kc, "-metrics-address", addr)
	cmd.Stdout, cmd.Stderr = f, f
	// CSIMIGRATE_BENCH_CONTROLLER_ENV: its environment's additions
	// (space-separated NAME=VALUE), to compare settings.
	cmd.Env = append(os.Environ(), strings.Fields(os.Getenv("CSIMIGRATE_BENCH_CONTROLLER_ENV"))...)
	start := time.Now()
	if err := testenv.StartOwned(cmd); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	series := `csimigrate_intree_persistentvolumes{plugin="kubernetes.io/rbd"}`
	deadline := time.Now().Add(10 * time.Minute)
	for {
		if v := scrapeMetric(addr, series); v == float64(inTree) {
			synced = time.Since(start)
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			b.Fatalf("the controller did not count %d in-tree PVs within 10 minutes (%s = %v):\n%s", inTree, series, scrapeMetric(addr, series), tail(string(log), 4000))
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A few more passes of its status and rechecks, then its peak.
	time.Sleep(3 * time.Second)
	return peakRSS(b, cmd.Process.Pid), synced
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

// peakRSS is a process's peak resident set size (VmHWM), in bytes.
func peakRSS(b *testing.B, pid int) uint64 {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(s), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

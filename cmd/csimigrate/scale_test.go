package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
)

// writeDump writes a `kubectl get pv -o json` List of n in-tree PVs (RBD,
// CephFS and vSphere in turn), as the API server prints them.
func writeDump(t testing.TB, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pvs.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprint(w, `{"apiVersion":"v1","items":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			w.WriteByte(',')
		}
		meta := fmt.Sprintf(`"metadata":{"name":"pvc-%08d","uid":"6f1c2a4e-0d1b-4b53-9a61-%012d","resourceVersion":"%d","creationTimestamp":"2024-03-01T10:00:00Z",`+
			`"annotations":{"pv.kubernetes.io/provisioned-by":"in-tree","pv.kubernetes.io/bound-by-controller":"yes"},"finalizers":["kubernetes.io/pv-protection"]}`, i, i, 1000+i)
		common := fmt.Sprintf(`"capacity":{"storage":"10Gi"},"accessModes":["ReadWriteOnce"],"persistentVolumeReclaimPolicy":"Delete","storageClassName":"standard",`+
			`"claimRef":{"kind":"PersistentVolumeClaim","namespace":"ns-%d","name":"data-%d","uid":"0f4f8e0e-1c4b-4f7a-9a3e-%012d"}`, i%500, i, i)
		var src string
		switch i % 3 {
		case 0:
			src = fmt.Sprintf(`"rbd":{"monitors":["10.70.53.126:6789","10.70.53.127:6789"],"image":"kubernetes-dynamic-pvc-%08d-4088-11ec-b823-0242ac110003","pool":"replicapool","user":"kube","fsType":"ext4","secretRef":{"name":"ceph","namespace":"ns-%d"}}`, i, i%500)
		case 1:
			src = fmt.Sprintf(`"cephfs":{"monitors":["10.70.53.126:6789"],"path":"/volumes/csi/%d","user":"kube","secretRef":{"name":"cephfs","namespace":"ns-%d"}}`, i, i%500)
		default:
			src = fmt.Sprintf(`"vsphereVolume":{"volumePath":"[vsanDatastore] kubevols/pvc-%08d.vmdk","fsType":"ext4","storagePolicyName":"gold"},`+
				`"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"topology.kubernetes.io/zone","operator":"In","values":["zone-a"]}]}]}}`, i)
		}
		fmt.Fprintf(w, `{"apiVersion":"v1","kind":"PersistentVolume",%s,"spec":{%s,%s},"status":{"phase":"Bound"}}`, meta, common, src)
	}
	fmt.Fprint(w, `],"kind":"List","metadata":{"resourceVersion":""}}`)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

// scaleSizes are the dump sizes of the scale benchmarks: 25,000 and 100,000
// PVs, or the comma-separated counts of CSIMIGRATE_SCALE_N (1000000 for the
// README's figures).
func scaleSizes() []int {
	var out []int
	for _, f := range strings.Split(os.Getenv("CSIMIGRATE_SCALE_N"), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return []int{25_000, 100_000}
	}
	return out
}

// peakHeap samples the live heap while f runs.
func peakHeap(f func()) uint64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
			}
		}
	}()
	f()
	close(done)
	return peak.Load()
}

// BenchmarkPlan100k plans a dump of 100,000 PVs (about 110 MB of JSON).
// The figures to read: seconds per op (the target is under 20 s on 2 cores)
// and peak-heap-MB, which grows with the report (one row per volume) but not
// with the dump's size.
func BenchmarkPlan100k(b *testing.B) { benchPlan(b, writeDump) }

// benchPlan plans dumps of scaleSizes() PVs written by write.
func benchPlan(b *testing.B, write func(testing.TB, int) string) {
	for _, n := range scaleSizes() {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			path := write(b, n)
			st, _ := os.Stat(path)
			b.ReportMetric(float64(st.Size())/1e6, "input-MB")
			runtime.GC()
			var peak uint64
			for b.Loop() {
				peak = peakHeap(func() {
					if code := run([]string{"plan", "-o", "json", "-f", path}, nil, io.Discard, io.Discard); code != cli.ExitBlocked && code != cli.ExitOK {
						b.Fatalf("exit %d", code)
					}
				})
			}
			b.ReportMetric(float64(peak)/1e6, "peak-heap-MB")
		})
	}
}

// BenchmarkTranslate100k translates dumps of 25,000 and 100,000 PVs to JSON
// and to YAML: peak-heap-MB must not grow with the dump (each object is
// written as soon as it is read).
func BenchmarkTranslate100k(b *testing.B) {
	for _, n := range scaleSizes() {
		for _, out := range []string{"json", "yaml"} {
			b.Run(fmt.Sprintf("%d/%s", n, out), func(b *testing.B) {
				path := writeDump(b, n)
				runtime.GC()
				var peak uint64
				for b.Loop() {
					peak = peakHeap(func() {
						if code := run([]string{"translate", "-o", out, "-f", path}, nil, io.Discard, io.Discard); code != cli.ExitOK {
							b.Fatalf("exit %d", code)
						}
					})
				}
				b.ReportMetric(float64(peak)/1e6, "peak-heap-MB")
			})
		}
	}
}

// writeYAMLDump writes the dump of writeDump as `kubectl get pv -o yaml`
// prints it: one List document, its items as "- " entries at column 0.
func writeYAMLDump(t testing.TB, n int) string {
	t.Helper()
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	b, err := os.ReadFile(writeDump(t, n))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pvs.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("apiVersion: v1\nitems:\n")
	for _, it := range list.Items {
		y, err := yaml.JSONToYAML(it)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(strings.TrimSuffix(string(y), "\n"), "\n") {
			if i == 0 {
				w.WriteString("- ")
			} else {
				w.WriteString("  ")
			}
			w.WriteString(line)
			w.WriteByte('\n')
		}
	}
	w.WriteString("kind: List\nmetadata:\n  resourceVersion: \"\"\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

// BenchmarkPlanYAML100k plans a YAML List dump (kubectl's -o yaml) of
// 25,000 and 100,000 PVs: the items are streamed, so peak-heap-MB grows with
// the report as for JSON, not with the dump.
func BenchmarkPlanYAML100k(b *testing.B) { benchPlan(b, writeYAMLDump) }

// BenchmarkRewriteScript100k prints the rewrite script for dumps of 25,000
// and 100,000 PVs, from a file and from standard input: peak-heap-MB must
// not grow with the dump (StorageClasses are read first, then each PV's
// steps are written as it is read).
func BenchmarkRewriteScript100k(b *testing.B) {
	for _, n := range scaleSizes() {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			path := writeDump(b, n)
			runtime.GC()
			var peak uint64
			for b.Loop() {
				peak = peakHeap(func() {
					if code := run([]string{"rewrite", "-f", path}, nil, io.Discard, io.Discard); code != cli.ExitOK && code != cli.ExitBlocked {
						b.Fatalf("exit %d", code)
					}
				})
			}
			b.ReportMetric(float64(peak)/1e6, "peak-heap-MB")
		})
	}
}

package cephtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/translate"
)

// One cluster and one pair of drivers serve every test of the package; the
// tests run one after another (Ceph CSI's config.json is one file).
var (
	envOnce    sync.Once
	envCluster *Cluster
	envDrivers *Drivers
	envErr     error
	envBin     string // the csimigrate command
	envDir     string
)

func TestMain(m *testing.M) {
	// Everything the tests start or write lives under the reaper's root,
	// so that a test binary killed on its -timeout leaves nothing behind.
	r, err := StartReaper()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		os.Exit(1)
	}
	reaper = r
	os.Setenv("TMPDIR", r.Root)
	code := m.Run()
	defer func() {
		r.Done()
		os.Exit(code)
	}()
	if envDrivers != nil {
		envDrivers.Stop()
	}
	if envCluster != nil {
		envCluster.Stop()
	}
	if envDir != "" {
		os.RemoveAll(envDir)
	}
}

// cephEnv returns the running cluster and drivers, starting them on first
// use; it fails the test when they cannot start.
func cephEnv(t testing.TB) (*Cluster, *Drivers) {
	t.Helper()
	envOnce.Do(func() {
		start := time.Now()
		ctx := context.Background()
		if envDir, envErr = os.MkdirTemp("", "csimigrate-cephtest-"); envErr != nil {
			return
		}
		// The command as scripts/test built it once for every package
		// that runs it, else built here.
		if envBin = os.Getenv("CSIMIGRATE_BIN"); envBin == "" {
			envBin = filepath.Join(envDir, "csimigrate")
			build := exec.Command("go", "build", "-o", envBin, "github.com/csimigrate/csimigrate/cmd/csimigrate")
			if out, err := build.CombinedOutput(); err != nil {
				envErr = fmt.Errorf("building the csimigrate command: %v\n%s", err, out)
				return
			}
		}
		if envCluster, envErr = StartCluster(ctx, true); envErr != nil {
			return
		}
		// The drivers start with an empty cluster map; each test writes the
		// one csimigrate plan prints for its objects.
		if envDrivers, envErr = envCluster.StartDrivers(ctx, []byte("[]")); envErr != nil {
			return
		}
		fmt.Fprintf(os.Stderr, "cephtest: Ceph cluster and Ceph CSI %s drivers up in %s\n", CephCSIVersion, time.Since(start).Round(10*time.Millisecond))
	})
	if envErr != nil {
		t.Fatalf("the Ceph test environment did not start: %v", envErr)
	}
	return envCluster, envDrivers
}

// configure runs `csimigrate plan -o json` on the objects and the config
// map the drivers read (runCommand: their config.json), gives the drivers
// the map the plan says to apply (their entries kept, the missing ones
// added), and returns a translator that knows the same clusters, with a
// test logger.
func configure(t testing.TB, d *Drivers, objs ...runtime.Object) (*translate.Translator, klog.Logger) {
	t.Helper()
	out := planJSON(t, objs...)
	var plan struct {
		Config []struct {
			Deployment string `json:"deployment"`
			Merged     *struct {
				Data map[string]string `json:"data"`
			} `json:"configMapMerged"`
		} `json:"cephCSIConfig"`
	}
	if err := json.Unmarshal(out, &plan); err != nil {
		t.Fatalf("csimigrate plan -o json: %v", err)
	}
	cfg, err := os.ReadFile(CephCSIConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range plan.Config {
		if c.Deployment != "manifests" {
			t.Fatalf("csimigrate plan found a %q deployment of Ceph CSI, not its config map: %s", c.Deployment, out)
		}
		if c.Merged != nil {
			cfg = []byte(c.Merged.Data["config.json"])
		}
	}
	if err := d.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	clusters, err := ceph.ParseClusterConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := translate.New(translate.WithCephClusterConfig(clusters))
	if err != nil {
		t.Fatal(err)
	}
	logger, _ := ktesting.NewTestContext(t)
	return tr, logger
}

// planJSON is the output of `csimigrate plan -o json` on the objects (it
// exits 1 when something blocks a migration; that is a plan too).
func planJSON(t testing.TB, objs ...runtime.Object) []byte {
	t.Helper()
	return runCommand(t, []string{"plan", "-o", "json"}, objs...)
}

// runCommand runs the csimigrate command with args on a manifest of the
// objects and returns its output; exit 1 (something blocks) is an output
// too.
func runCommand(t testing.TB, args []string, objs ...runtime.Object) []byte {
	t.Helper()
	// The drivers' config map, as they read it now.
	if cfg, err := os.ReadFile(CephCSIConfigFile); err == nil {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, cephCSIConfigMap(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-f", path)
	}
	return runObjects(t, args, objs...)
}

// runObjects runs the csimigrate command with args on a manifest of the
// objects, and nothing else, and returns its output; exit 1 (something
// blocks) is an output too.
func runObjects(t testing.TB, args []string, objs ...runtime.Object) []byte {
	t.Helper()
	manifest := filepath.Join(t.TempDir(), "objects.yaml")
	var b bytes.Buffer
	s := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, kjson.SerializerOptions{Yaml: true})
	for _, o := range objs {
		b.WriteString("---\n")
		if err := s.Encode(o, &b); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(manifest, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(envBin, append(args, "-f", manifest)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		t.Fatalf("csimigrate %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// mountCap is a single-node-writer filesystem capability.
func mountCap(fsType string) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fsType}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}

func callCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// lines splits command output into its non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// cephCSIConfigMap is the manifest of Ceph CSI's config map (its deploy/
// manifests' ceph-csi-config) holding cfg as config.json, with the
// CSIDrivers of the running drivers.
func cephCSIConfigMap(cfg []byte) []byte {
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "ceph-csi-config", "namespace": "ceph-csi"}, "data": map[string]string{"config.json": string(cfg)}}
	// The CSIDrivers of the running drivers, as their manifests register
	// them.
	items := []any{cm}
	for _, d := range []string{plugin.RBDDriverName, plugin.CephFSDriverName} {
		items = append(items, map[string]any{"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": map[string]any{"name": d}})
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	return b
}

// serveDriverConfig makes the config map of the test's API server (Ceph
// CSI's manifests' ceph-csi-config) hold what the running drivers read:
// rewrite -apply judges a volume's cluster entry there.
func serveDriverConfig(t testing.TB, c kubernetes.Interface) {
	t.Helper()
	cfg, err := os.ReadFile(CephCSIConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.SetCephCSIConfig(context.Background(), c, cfg); err != nil {
		t.Fatal(err)
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/controller"
	"github.com/csimigrate/csimigrate/rewrite"
)

const manifests = "deploy/base"

// The controller's ServiceAccount as the API server names its requests.
const controllerUser = "system:serviceaccount:csimigrate-system:csimigrate-controller"

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// commandBinary is the command as a program: $CSIMIGRATE_BIN, which
// scripts/test builds once for every package that runs it, else built once
// per test run.
func commandBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binPath = os.Getenv("CSIMIGRATE_BIN"); binPath != "" {
			return
		}
		dir, err := os.MkdirTemp("", "csimigrate-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "csimigrate")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("building the command: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// controllerServer is kube-apiserver (RBAC, audit log of service accounts)
// with kube-controller-manager's volume controllers, the manifests applied
// as they are, and a kubeconfig with the controller's ServiceAccount token.
type controllerServer struct {
	s        *testenv.Server
	c        kubernetes.Interface
	dyn      dynamic.Interface
	adminKC  string
	controlK string
}

func startControllerServer(t *testing.T) *controllerServer {
	t.Helper()
	s, err := testenv.Start(os.Stderr)
	if err != nil {
		t.Fatalf("cannot start kube-apiserver: %v", err)
	}
	t.Cleanup(s.Stop)
	// The controller's tests register the drivers themselves.
	if err := s.RemoveCSIDrivers(testenv.UpstreamCSIDrivers...); err != nil {
		t.Fatal(err)
	}
	if err := s.StartControllerManager(os.Stderr, testenv.VolumeControllers...); err != nil {
		t.Fatalf("cannot start kube-controller-manager: %v", err)
	}
	dyn, err := dynamic.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	cs := &controllerServer{s: s, c: s.Client, dyn: dyn}
	if cs.adminKC, err = s.WriteKubeconfig(); err != nil {
		t.Fatal(err)
	}
	applyManifests(t, dyn)
	cs.controlK = serviceAccountKubeconfig(t, s, "csimigrate-system", "csimigrate-controller")
	return cs
}

// serviceAccountKubeconfig writes a kubeconfig with a token of the
// ServiceAccount ns/name.
func serviceAccountKubeconfig(t *testing.T, s *testenv.Server, ns, name string) string {
	t.Helper()
	tok, err := s.Client.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: %s
  user: {token: %q}
contexts:
- name: test
  context: {cluster: test, user: %s}
current-context: test
`, s.Config.Host, name, tok.Status.Token, name)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// kinds maps the manifests' kinds to their resources (namespaced or not).
var kinds = map[string]struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}{
	"Namespace":                {schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, false},
	"ServiceAccount":           {schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, true},
	"CustomResourceDefinition": {schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, false},
	"ClusterRole":              {schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, false},
	"ClusterRoleBinding":       {schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}, false},
	"Role":                     {schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}, true},
	"RoleBinding":              {schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}, true},
	"Deployment":               {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, true},
	"PodDisruptionBudget":      {schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}, true},
}

// manifestDocs are the documents of the manifests' kustomize base.
func manifestDocs(t testing.TB) []*unstructured.Unstructured {
	t.Helper()
	return kustomized(t, manifests)
}

// kustomized are the documents kubectl kustomize renders from dir.
func kustomized(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	b, err := exec.Command("kubectl", "kustomize", dir).Output()
	if err != nil {
		msg := ""
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			msg = string(ee.Stderr)
		}
		t.Fatalf("kubectl kustomize %s (Debian's kubectl package): %v %s", dir, err, msg)
	}
	return yamlDocs(t, dir, b)
}

// yamlDocs are the objects of a multi-document YAML stream read from source.
func yamlDocs(t testing.TB, source string, b []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for doc := range strings.SplitSeq(string(b), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%s: %v", source, err)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

// applyManifests creates every object of the manifests as it is, and waits
// for the CRD to be established.
func applyManifests(t testing.TB, dyn dynamic.Interface) {
	t.Helper()
	createDocs(t, dyn, manifests, manifestDocs(t))
	ctx := context.Background()
	eventually(t, 30*time.Second, func() error {
		_, err := dyn.Resource(controller.StatusResource).List(ctx, metav1.ListOptions{})
		return err
	})
}

// createDocs creates every object of docs (read from source) as it is.
func createDocs(t testing.TB, dyn dynamic.Interface, source string, docs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	for _, u := range docs {
		k, ok := kinds[u.GetKind()]
		if !ok {
			t.Fatalf("%s: kind %s the test does not know", source, u.GetKind())
		}
		var err error
		if k.namespaced {
			_, err = dyn.Resource(k.gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
		} else {
			_, err = dyn.Resource(k.gvr).Create(ctx, u, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatalf("%s: %s %s: the API server refuses it: %v", source, u.GetKind(), u.GetName(), err)
		}
	}
}

// eventually retries f until it succeeds or timeout passes.
func eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// controllerProc is a running csimigrate controller.
type controllerProc struct {
	cmd     *exec.Cmd
	log     string
	metrics string
	done    chan struct{}
	err     error
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startController runs csimigrate controller with the ServiceAccount's
// kubeconfig; it is killed when the test ends, or with the test binary.
func (cs *controllerServer) startController(t *testing.T, identity string, args ...string) *controllerProc {
	t.Helper()
	p := &controllerProc{log: filepath.Join(t.TempDir(), identity+".log"), metrics: freeAddr(t), done: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	all := append([]string{"controller", "-kubeconfig", cs.controlK, "-identity", identity, "-metrics-address", p.metrics,
		"-v", "-recheck", "1s", "-status-every", "500ms", "-leader-elect-lease-duration", "4s", "-leader-elect-renew-deadline", "3s", "-leader-elect-retry-period", "500ms"}, args...)
	p.cmd = exec.Command(commandBinary(t), all...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := testenv.StartOwned(p.cmd); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); f.Close(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			t.Logf("%s's log:\n%s", identity, tail(string(b), 6000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// scrape returns the value of a metric line "name{labels} value", or -1.
func (p *controllerProc) scrape(t *testing.T, series string) float64 {
	t.Helper()
	return scrapeMetric(p.metrics, series)
}

// pvPhase says whether a PV is rewritten (a CSI PV csimigrate created, its
// reclaim policy restored) or still in-tree.
func pvPhase(c kubernetes.Interface, name string) (string, *v1.PersistentVolume, error) {
	pv, err := c.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return "", nil, err
	}
	switch {
	case pv.Spec.CSI != nil && pv.Annotations[rewrite.AnnMigratedFrom] != "" && pv.Annotations[rewrite.AnnReclaimPolicy] == "":
		return "rewritten", pv, nil
	case pv.Spec.CSI == nil:
		return "in-tree", pv, nil
	}
	return "in progress", pv, nil
}

func waitRewritten(t *testing.T, c kubernetes.Interface, names ...string) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		for _, n := range names {
			st, _, err := pvPhase(c, n)
			if err != nil || st != "rewritten" {
				return fmt.Errorf("pv/%s: %s %v", n, st, err)
			}
		}
		return nil
	})
}

// eventsOf are the reasons of the Events on an object.
func eventsOf(c kubernetes.Interface, ns, kind, name string) []string {
	list, err := c.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.kind=" + kind + ",involvedObject.name=" + name})
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Reason)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func hasEvent(c kubernetes.Interface, ns, kind, name, reason string) error {
	if got := eventsOf(c, ns, kind, name); !slices.Contains(got, reason) {
		return fmt.Errorf("%s %s/%s: Events %v, want %s", kind, ns, name, got, reason)
	}
	return nil
}

// statusOf reads the CSIMigration status.
func statusOf(dyn dynamic.Interface) (map[string]any, error) {
	u, err := dyn.Resource(controller.StatusResource).Get(context.Background(), controller.StatusName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	st, _ := u.Object["status"].(map[string]any)
	if st == nil {
		return nil, errors.New("no status yet")
	}
	return st, nil
}

func condition(st map[string]any, typ string) string {
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

func num(st map[string]any, key string) int64 {
	switch v := st[key].(type) {
	case int64:
		return v
	case float64:
		return int64(v)
	}
	return -1
}

// storageCSIDriverFor is the CSIDriver object that registers driver.
func storageCSIDriverFor(driver string) storagev1.CSIDriver {
	return storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driver}}
}

func createCSIDriver(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	d := storageCSIDriverFor(name)
	if _, err := c.StorageV1().CSIDrivers().Create(context.Background(), &d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// The controller, as a process with the token of the ServiceAccount the
// manifests create, on kube-apiserver with RBAC and kube-controller-manager's
// volume controllers: it waits for each CSI driver's registration, converges
// the in-tree PVs and classes in scope to their CSI forms (claims stay
// bound), leaves the blocked ones (a missing Secret, a claim in use where
// the nodes do not migrate the plugin) untouched with Events on the PV and
// the claim, counts them in metrics and in the status object, converts what
// is created later and what is unblocked; and every API call it made is
// allowed by the manifests' RBAC, which grant nothing it did not use.
func TestControllerConvergesWithRBAC(t *testing.T) {
	cs := startControllerServer(t)
	c := cs.c
	ctx := context.Background()
	names := seedForPods(t, c, "ctl")
	// Out of scope by label: never touched.
	skip := testenv.CreateBoundPV(t, c, "ctl", "ctl-skip", func(pv *v1.PersistentVolume) {
		pv.Labels = map[string]string{"csimigrate.io/skip": "true"}
		pv.Spec.RBD.SecretRef = &v1.SecretReference{Name: "ceph-skip", Namespace: "ctl"}
	})
	// Blocked: the Secret its CSI form needs does not exist.
	testenv.CreateBoundPV(t, c, "ctl", "ctl-nosecret", func(pv *v1.PersistentVolume) {
		pv.Spec.RBD.SecretRef = &v1.SecretReference{Name: "absent", Namespace: "ctl"}
	})
	if err := c.CoreV1().Secrets("ctl").Delete(ctx, "absent", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	// In use by a pod on a node that does not migrate the plugin.
	ownSecret := func(pv *v1.PersistentVolume) {
		pv.Spec.RBD.SecretRef = &v1.SecretReference{Name: "ceph-" + pv.Name, Namespace: "ctl"}
	}
	testenv.CreateBoundPV(t, c, "ctl", "ctl-inuse", ownSecret)
	runPodOn(t, c, "ctl", "ctl-inuse")
	all := append(slices.Clone(names), "ctl-nosecret", "ctl-inuse")
	testenv.WaitBound(t, c, "ctl", append(slices.Clone(all), "ctl-skip"))
	before := map[string]*v1.PersistentVolume{}
	for _, n := range []string{"ctl-nosecret", "ctl-inuse"} {
		_, before[n], _ = pvPhase(c, n)
	}

	p := cs.startController(t, "one", "-online", "-pv-selector", "!csimigrate.io/skip")
	// No driver registered: everything waits, nothing is written.
	eventually(t, 30*time.Second, func() error {
		if err := hasEvent(c, "", "PersistentVolume", "ctl-rbd", controller.ReasonWaitingForDriver); err != nil {
			return err
		}
		if err := hasEvent(c, "ctl", "PersistentVolumeClaim", "rbd", controller.ReasonWaitingForDriver); err != nil {
			return err
		}
		st, err := statusOf(cs.dyn)
		if err != nil || num(st, "waitingForDriver") != int64(len(all))+1 {
			return fmt.Errorf("status %v %v: want %d waiting", st, err, len(all)+1)
		}
		return nil
	})
	for _, n := range all {
		if st, _, _ := pvPhase(c, n); st != "in-tree" {
			t.Fatalf("pv/%s is %s before its driver is registered", n, st)
		}
	}

	for _, d := range []string{"rbd.csi.ceph.com", "cephfs.csi.ceph.com", "csi.vsphere.vmware.com"} {
		createCSIDriver(t, c, d)
	}
	waitRewritten(t, c, names...)
	testenv.WaitBound(t, c, "ctl", names)
	eventually(t, 30*time.Second, func() error {
		sc, err := c.StorageV1().StorageClasses().Get(ctx, "rbd-ctl", metav1.GetOptions{})
		if err != nil || sc.Provisioner != "rbd.csi.ceph.com" {
			return fmt.Errorf("storageclass/rbd-ctl: %v %v", sc, err)
		}
		return nil
	})
	// The blocked ones are untouched, with their reasons.
	eventually(t, 30*time.Second, func() error {
		for n, code := range map[string]rewrite.Code{"ctl-nosecret": rewrite.CodeSecretMissing, "ctl-inuse": rewrite.CodeInUse} {
			if err := hasEvent(c, "", "PersistentVolume", n, string(code)); err != nil {
				return err
			}
			if err := hasEvent(c, "ctl", "PersistentVolumeClaim", n, string(code)); err != nil {
				return err
			}
			if v := p.scrape(t, `csimigrate_blocked{kind="pv",reason="`+string(code)+`"}`); v != 1 {
				return fmt.Errorf("metric blocked %s = %v", code, v)
			}
		}
		st, err := statusOf(cs.dyn)
		if err != nil || num(st, "inTreePersistentVolumes") != 2 || num(st, "blocked") != 2 || condition(st, "Blocked") != "True" || condition(st, "Complete") != "False" {
			return fmt.Errorf("status %v %v", st, err)
		}
		if v := p.scrape(t, `csimigrate_intree_persistentvolumes{plugin="kubernetes.io/rbd"}`); v != 2 {
			return fmt.Errorf("metric in-tree RBD PVs = %v", v)
		}
		return nil
	})
	for n, pv := range before {
		_, now, err := pvPhase(c, n)
		if err != nil || now.ResourceVersion != pv.ResourceVersion {
			t.Errorf("blocked pv/%s changed: resourceVersion %s, was %s (%v)", n, now.ResourceVersion, pv.ResourceVersion, err)
		}
	}
	// Each rewritten PV ends with an Event on it and its claim, counted.
	eventually(t, 30*time.Second, func() error {
		if err := hasEvent(c, "", "PersistentVolume", "ctl-rbd", controller.ReasonMigrated); err != nil {
			return err
		}
		if err := hasEvent(c, "ctl", "PersistentVolumeClaim", "rbd", controller.ReasonMigrated); err != nil {
			return err
		}
		if v := p.scrape(t, `csimigrate_rewrites_total{kind="pv"}`); v != float64(len(names)) {
			return fmt.Errorf("metric rewrites = %v, want %d", v, len(names))
		}
		return nil
	})

	// Created after the migration began: converted too.
	testenv.CreateBoundPV(t, c, "ctl", "ctl-late", ownSecret)
	if _, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "rbd-late"}, Provisioner: "kubernetes.io/rbd",
		Parameters: map[string]string{"monitors": "10.70.53.126:6789", "adminSecretName": "ceph-admin", "adminSecretNamespace": "kube-system", "pool": "rbd"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Unblocked: the Secret created, the pod gone.
	if _, err := c.CoreV1().Secrets("ctl").Create(ctx, testenv.CephSecret("ctl", "absent", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().Pods("ctl").Delete(ctx, "app", metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		t.Fatal(err)
	}
	waitRewritten(t, c, "ctl-late", "ctl-nosecret", "ctl-inuse")
	testenv.WaitBound(t, c, "ctl", append(all, "ctl-late"))
	eventually(t, 30*time.Second, func() error {
		sc, err := c.StorageV1().StorageClasses().Get(ctx, "rbd-late", metav1.GetOptions{})
		if err != nil || sc.Provisioner != "rbd.csi.ceph.com" {
			return fmt.Errorf("storageclass/rbd-late: %v", err)
		}
		st, err := statusOf(cs.dyn)
		if err != nil || condition(st, "Complete") != "True" || condition(st, "Blocked") != "False" || num(st, "inTreePersistentVolumes") != 0 {
			return fmt.Errorf("status %v %v", st, err)
		}
		return nil
	})
	if _, now, err := pvPhase(c, "ctl-skip"); err != nil || now.ResourceVersion != skip.ResourceVersion && now.Spec.CSI != nil {
		t.Errorf("the PV out of scope was touched: %v %v", now, err)
	}
	if cms, err := c.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=csimigrate"}); err != nil || len(cms.Items) > 0 {
		t.Errorf("state left: %v %v", cms, err)
	}

	// Graceful shutdown: SIGTERM, the Lease given up.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("after SIGTERM the controller exited with %v", p.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the controller did not stop within 20 s of SIGTERM")
	}
	if l, err := c.CoordinationV1().Leases("kube-system").Get(ctx, apply.LeaseName, metav1.GetOptions{}); err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "" {
		t.Errorf("the Lease after shutdown: %+v %v; want no holder", l, err)
	}

	checkRBAC(t, cs.s)
}

// seedForPods seeds namespace ns (testenv.Seed) and creates its default
// ServiceAccount, which pods need (no controller-manager creates it here);
// it returns the seeded PVs' names.
func seedForPods(t *testing.T, c kubernetes.Interface, ns string) []string {
	t.Helper()
	names := testenv.Seed(t, c, ns)
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(context.Background(), &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return names
}

// runPodOn creates pod "app" in ns on node-a, using claim: a volume in use
// on a node that does not migrate the plugin.
func runPodOn(t *testing.T, c kubernetes.Interface, ns, claim string) {
	t.Helper()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: v1.PodSpec{NodeName: "node-a",
		Containers: []v1.Container{{Name: "app", Image: "app"}},
		Volumes:    []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}}
	if _, err := c.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// checkRBAC compares what the controller's ServiceAccount did (the API
// server's audit log) with what the manifests grant it: nothing refused,
// nothing granted that it did not use.
func checkRBAC(t *testing.T, s *testenv.Server) {
	t.Helper()
	checkRBACOf(t, s, controllerUser, manifestDocs(t), map[string]string{
		"/events patch": "the event recorder patches an Event that repeats (its count) instead of creating it again",
	})
}

// checkRBACOf reads the audit log: every request user made was allowed, and
// the roles of docs grant user nothing it did not use, but for unexercised
// (each with the reason this test does not take its path).
func checkRBACOf(t *testing.T, s *testenv.Server, user string, docs []*unstructured.Unstructured, unexercised map[string]string) {
	t.Helper()
	f, err := os.Open(s.AuditLog())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	used := map[string]bool{}
	var refused []string
	dec := json.NewDecoder(f)
	for {
		var e struct {
			Stage      string `json:"stage"`
			Verb       string `json:"verb"`
			RequestURI string `json:"requestURI"`
			User       struct {
				Username string `json:"username"`
			} `json:"user"`
			ObjectRef *struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
				APIGroup    string `json:"apiGroup"`
				Namespace   string `json:"namespace"`
			} `json:"objectRef"`
			ResponseStatus *struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
		}
		if err := dec.Decode(&e); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if e.User.Username != user || e.Stage != "ResponseComplete" || e.ObjectRef == nil {
			continue
		}
		key := rbacKey(e.ObjectRef.APIGroup, e.ObjectRef.Resource, e.ObjectRef.Subresource, e.Verb)
		used[key] = true
		if e.ResponseStatus != nil && e.ResponseStatus.Code == http.StatusForbidden {
			refused = append(refused, key+" "+e.RequestURI)
		}
	}
	granted := map[string]bool{}
	for _, u := range docs {
		if u.GetKind() != "ClusterRole" && u.GetKind() != "Role" {
			continue
		}
		b, _ := json.Marshal(u.Object)
		var r rbacv1.ClusterRole
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		for _, rule := range r.Rules {
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, v := range rule.Verbs {
						res, sub, _ := strings.Cut(res, "/")
						granted[rbacKey(g, res, sub, v)] = true
					}
				}
			}
		}
	}
	var usedList []string
	for k := range used {
		usedList = append(usedList, k)
	}
	slices.Sort(usedList)
	t.Logf("%s's API calls (group/resource verb): %s", user, strings.Join(usedList, ", "))
	if len(refused) > 0 {
		t.Errorf("requests the RBAC of the manifests refused: %s", strings.Join(refused, "; "))
	}
	var extra []string
	for k := range granted {
		if !used[k] && unexercised[k] == "" {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	if len(extra) > 0 {
		t.Errorf("the roles grant what %s did not use: %s", user, strings.Join(extra, ", "))
	}
	for k := range used {
		if !granted[k] {
			t.Errorf("used but not granted (allowed by a default role?): %s", k)
		}
	}
}

func rbacKey(group, resource, sub, verb string) string {
	if sub != "" {
		resource += "/" + sub
	}
	return group + "/" + resource + " " + verb
}

// Two replicas: the leader is killed in the middle of a PV's rewrite (after
// its second write: Retain set and the replacement saved), the standby takes
// the Lease once the leader's lapses and finishes the rewrite from the saved
// state, nothing lost (the claim bound to the same PV name, no state left);
// rewrite -apply started while a replica leads refuses, naming it.
func TestControllerLeaderKilledMidRewrite(t *testing.T) {
	cs := startControllerServer(t)
	c := cs.c
	ctx := context.Background()
	testenv.CreateBoundPV(t, c, "lead", "lead-pv", nil)
	testenv.WaitBound(t, c, "lead", []string{"lead-pv"})
	createCSIDriver(t, c, "rbd.csi.ceph.com")

	a := cs.startController(t, "replica-a", "-max-writes", "2")
	eventually(t, 30*time.Second, func() error {
		if _, err := c.CoreV1().ConfigMaps("kube-system").Get(ctx, apply.StateName("lead-pv"), metav1.GetOptions{}); err != nil {
			return err
		}
		return hasEvent(c, "", "PersistentVolume", "lead-pv", controller.ReasonWriteLimit)
	})
	b := cs.startController(t, "replica-b")
	// While replica-a leads, rewrite -apply waits for the Lease, then
	// refuses naming the holder; replica-b stands by.
	_, stderr, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", cs.adminKC, "-lease-wait", "1s", "lead-pv")
	if code != cli.ExitBlocked || !strings.Contains(stderr, "replica-a") {
		t.Errorf("rewrite -apply while the controller leads: exit %d: %s", code, stderr)
	}
	if st, _, _ := pvPhase(c, "lead-pv"); st != "in-tree" {
		t.Fatalf("pv/%s is %s while the leader is stuck and the standby waits", "lead-pv", st)
	}
	// The leader dies without giving the Lease up.
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	waitRewritten(t, c, "lead-pv")
	testenv.WaitBound(t, c, "lead", []string{"lead-pv"})
	l, err := c.CoordinationV1().Leases("kube-system").Get(ctx, apply.LeaseName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "replica-b" {
		t.Errorf("the Lease after the takeover: %+v %v; want replica-b", l, err)
	}
	eventually(t, 10*time.Second, func() error {
		_, err := c.CoreV1().ConfigMaps("kube-system").Get(ctx, apply.StateName("lead-pv"), metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("the state ConfigMap: %v", err)
		}
		return nil
	})
	_ = b
}

// -dry-run only reports: with the drivers registered, every PV and class in
// scope gets a WouldMigrate Event saying what would be done (the writes
// sent with server-side dry run, so the API server validated them), and
// nothing is written: same resourceVersions, no state, no Progressing.
func TestControllerDryRun(t *testing.T) {
	cs := startControllerServer(t)
	c := cs.c
	ctx := context.Background()
	names := testenv.Seed(t, c, "dry")
	testenv.WaitBound(t, c, "dry", names)
	for _, d := range []string{"rbd.csi.ceph.com", "cephfs.csi.ceph.com", "csi.vsphere.vmware.com"} {
		createCSIDriver(t, c, d)
	}
	before := map[string]string{}
	for _, n := range names {
		_, pv, err := pvPhase(c, n)
		if err != nil {
			t.Fatal(err)
		}
		before[n] = pv.ResourceVersion
	}
	sc, err := c.StorageV1().StorageClasses().Get(ctx, "rbd-dry", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// With a write limit, as a canary's real run would have.
	cs.startController(t, "dry", "-dry-run", "-max-writes", "5")
	eventually(t, 30*time.Second, func() error {
		for _, n := range names {
			if err := hasEvent(c, "", "PersistentVolume", n, controller.ReasonWouldMigrate); err != nil {
				return err
			}
		}
		if err := hasEvent(c, "", "StorageClass", "rbd-dry", controller.ReasonWouldMigrate); err != nil {
			return err
		}
		st, err := statusOf(cs.dyn)
		if err != nil || num(st, "inTreePersistentVolumes") != int64(len(names)) || condition(st, "Progressing") != "False" {
			return fmt.Errorf("status %v %v", st, err)
		}
		return nil
	})
	if evs, err := c.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=PersistentVolume,involvedObject.name=" + names[0] + ",reason=" + controller.ReasonWouldMigrate}); err != nil || len(evs.Items) == 0 ||
		!strings.Contains(evs.Items[0].Message, "the real run stops after 5 writes in all") {
		t.Errorf("the dry run's verdict does not say the real run's write limit: %v %v", evs, err)
	}
	time.Sleep(time.Second) // a few more passes
	for _, n := range names {
		if _, pv, err := pvPhase(c, n); err != nil || pv.ResourceVersion != before[n] {
			t.Errorf("pv/%s changed in a dry run: %v", n, err)
		}
	}
	if now, err := c.StorageV1().StorageClasses().Get(ctx, "rbd-dry", metav1.GetOptions{}); err != nil || now.ResourceVersion != sc.ResourceVersion {
		t.Errorf("the class changed in a dry run: %v", err)
	}
	if cms, err := c.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=csimigrate"}); err != nil || len(cms.Items) > 0 {
		t.Errorf("a dry run saved state: %v %v", cms, err)
	}
}

// The shipped manifests (a kustomize base and its overlays): kube-apiserver
// accepts what each renders (server-side dry run), and each Deployment keeps
// its limits and security context. (The controller command's own tests
// parse each Deployment's arguments: TestDeployArguments.)
func TestKustomizeOverlaysAccepted(t *testing.T) {
	s, err := testenv.Start(os.Stderr)
	if err != nil {
		t.Fatalf("cannot start kube-apiserver: %v", err)
	}
	t.Cleanup(s.Stop)
	dyn, err := dynamic.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "csimigrate-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	for _, dir := range []string{manifests, "deploy/overlays/act", "deploy/overlays/adopt-ceph", "deploy/overlays/adopt-vsphere"} {
		t.Run(dir, func(t *testing.T) {
			var deployment *unstructured.Unstructured
			for _, u := range kustomized(t, dir) {
				if u.GetKind() == "Namespace" {
					continue // created above: dry-run objects need it to exist
				}
				k, ok := kinds[u.GetKind()]
				if !ok {
					t.Fatalf("%s: kind %s the test does not know", dir, u.GetKind())
				}
				var err error
				if k.namespaced {
					_, err = dyn.Resource(k.gvr).Namespace(u.GetNamespace()).Create(ctx, u, dry)
				} else {
					_, err = dyn.Resource(k.gvr).Create(ctx, u, dry)
				}
				if err != nil {
					t.Errorf("%s %s: the API server refuses it: %v", u.GetKind(), u.GetName(), err)
				}
				if u.GetKind() == "Deployment" {
					deployment = u
				}
			}
			if deployment == nil {
				t.Fatalf("%s renders no Deployment", dir)
			}
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(deployment.Object, &d); err != nil {
				t.Fatal(err)
			}
			ctr := d.Spec.Template.Spec.Containers[0]
			if ctr.Resources.Limits.Memory().IsZero() || ctr.SecurityContext == nil || !*ctr.SecurityContext.ReadOnlyRootFilesystem {
				t.Errorf("the container's limits or security context are gone: %+v %+v", ctr.Resources, ctr.SecurityContext)
			}
		})
	}
}

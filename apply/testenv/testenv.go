// Package testenv runs a real kube-apiserver, backed by etcd, on loopback
// for tests that must be judged by Kubernetes' own validation.
//
// The API server is built from the k8s.io/kubernetes module by the tool
// module ../tools/kube-apiserver and cached outside the work tree (the user
// cache directory, keyed by version), so only the first run pays the cold
// build. etcd comes from Debian's etcd-server package. ../scripts/setup-apiserver
// installs and builds both; Start fails the test, never skips it, when the
// server cannot start.
package testenv

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/csimigrate/csimigrate/plugin"
)

// KubernetesVersion is the release the API server is built from.
const KubernetesVersion = "v1.37.2"

// Release is a Kubernetes release the tests run: its version and the tools/
// module its kube-apiserver, kube-controller-manager and hollow kubelet are
// built from (packages ./kube-apiserver, ./kube-controller-manager and
// ./hollownode of it).
type Release struct {
	Version string
	// dir is the tools/ module.
	dir string
}

// Releases the tests run. V1_37 is the default (Start); V1_30 is the last
// release with the in-tree RBD plugin and its CSI migration.
var (
	V1_37 = Release{Version: KubernetesVersion, dir: "kubernetes-1.37"}
	V1_30 = Release{Version: "v1.30.14", dir: "kubernetes-1.30"}
)

// commands are the commands of a release's tools/ module: each one's
// package, and the variable that overrides the default release's build.
var commands = map[string]struct{ pkg, env string }{
	"kube-apiserver":          {"./kube-apiserver", "CSIMIGRATE_KUBE_APISERVER"},
	"kube-controller-manager": {"./kube-controller-manager", "CSIMIGRATE_KUBE_CONTROLLER_MANAGER"},
	"hollow-node":             {"./hollownode", "CSIMIGRATE_HOLLOW_NODE"},
}

// binary returns the release's build of the command name (kube-apiserver,
// kube-controller-manager or hollow-node): for the default release the path
// in the command's override variable when set, else the cached build, built
// when missing.
func (r Release) binary(name string, log io.Writer) (string, error) {
	if r == V1_37 {
		if p := os.Getenv(commands[name].env); p != "" {
			return p, nil
		}
	}
	return binaryOf(name, r, log)
}

// Server is a running kube-apiserver with its etcd.
type Server struct {
	Config *rest.Config
	Client kubernetes.Interface
	dir    string
	procs  []*proc
	logs   []*os.File
	// release is what the server and its processes are built from.
	release Release
	// cleanup are directories processes made outside dir (a hollow
	// kubelet's root), removed by Stop.
	cleanup []string
	// apiserverArgs are kube-apiserver's flags, for Upgrade.
	apiserverArgs []string
}

// proc is a started process; done is closed when it has exited, err then
// holds what Wait returned.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error
}

// repoRoot finds the repository from this file's location.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..") // apply/testenv
}

// APIServerBinary returns the path of the cached kube-apiserver, building it
// when missing. CSIMIGRATE_KUBE_APISERVER overrides the path.
func APIServerBinary(log io.Writer) (string, error) {
	return V1_37.binary("kube-apiserver", log)
}

// ControllerManagerBinary returns the path of the cached
// kube-controller-manager, building it when missing.
// CSIMIGRATE_KUBE_CONTROLLER_MANAGER overrides the path.
func ControllerManagerBinary(log io.Writer) (string, error) {
	return V1_37.binary("kube-controller-manager", log)
}

// HollowNodeBinary returns the kubemark hollow node (the real kubelet over a
// fake runtime and mounter) built from tools/kubernetes-1.37's hollownode
// package, $CSIMIGRATE_HOLLOW_NODE, else the cached build.
func HollowNodeBinary(log io.Writer) (string, error) {
	return V1_37.binary("hollow-node", log)
}

// binaryOf returns the cached build of the release's command name, building
// it when missing, stamped with its release as a released binary is (and as
// scripts/setup-apiserver builds it), so that clients read its version.
func binaryOf(name string, r Release, log io.Writer) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(cache, "csimigrate", name+"-"+r.Version)
	if st, err := os.Stat(bin); err == nil && st.Mode().IsRegular() {
		return bin, nil
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	fmt.Fprintf(log, "building %s %s into %s (a cold build takes minutes)\n", name, r.Version, bin)
	tmp := bin + ".tmp"
	minor, _, _ := strings.Cut(strings.TrimPrefix(r.Version, "v1."), ".")
	cmd := exec.Command("go", "build", "-o", tmp, "-ldflags", "-X k8s.io/component-base/version.gitVersion="+r.Version+
		" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor="+minor, commands[name].pkg)
	cmd.Dir = filepath.Join(repoRoot(), "tools", r.dir)
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building %s: %w", name, err)
	}
	return bin, os.Rename(tmp, bin)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start starts etcd and kube-apiserver in a temporary directory. Stop
// them with Stop. The token has system:masters rights.
func Start(log io.Writer) (*Server, error) { return StartRelease(log, V1_37) }

// errExited: a process of the server exited while it was starting (most
// often a port another test's server took between the choice of the port
// and its use).
var errExited = errors.New("exited while starting")

// StartRelease is Start with the kube-apiserver of release r; the server's
// controller manager and hollow kubelets are of r too. A start whose etcd or
// kube-apiserver exits before the server is ready is tried again on other
// ports, up to three times.
func StartRelease(log io.Writer, r Release) (*Server, error) {
	var err error
	for range 3 {
		var s *Server
		if s, err = startRelease(log, r); err == nil || !errors.Is(err, errExited) {
			return s, err
		}
		fmt.Fprintf(log, "testenv: %v; starting again on other ports\n", err)
	}
	return nil, err
}

func startRelease(log io.Writer, r Release) (*Server, error) {
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		return nil, fmt.Errorf("etcd not found (install Debian's etcd-server, or run scripts/setup-apiserver): %w", err)
	}
	apiserver, err := r.binary("kube-apiserver", log)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "csimigrate-apiserver-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, release: r}
	ok := false
	defer func() {
		if !ok {
			s.Stop()
		}
	}()
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	if err := s.spawn("etcd", etcd, "--data-dir", filepath.Join(dir, "etcd"), "--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", "http://127.0.0.1:"+strconv.Itoa(ports[1]), "--initial-advertise-peer-urls", "http://127.0.0.1:"+strconv.Itoa(ports[1]),
		"--initial-cluster", "default=http://127.0.0.1:"+strconv.Itoa(ports[1])); err != nil {
		return nil, err
	}
	files, err := writeAuthFiles(dir)
	if err != nil {
		return nil, err
	}
	s.apiserverArgs = []string{"--etcd-servers=" + etcdURL, "--secure-port=" + strconv.Itoa(ports[2]), "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		// 1.37 refuses a loopback advertise address to the endpoint
		// reconciler of the kubernetes Service; nothing here needs its
		// endpoints.
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + filepath.Join(dir, "certs"), "--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + files.pub, "--service-account-signing-key-file=" + files.key, "--token-auth-file=" + files.tokens,
		"--authorization-mode=RBAC", "--service-cluster-ip-range=10.0.0.0/24", "--enable-priority-and-fairness=false",
		// As kubeadm and most clusters run it: CSI node plugins are
		// privileged pods (the ceph-csi-operator's DaemonSets).
		"--allow-privileged=true",
		"--audit-policy-file=" + files.policy, "--audit-log-path=" + filepath.Join(dir, "audit.log"), "--audit-log-format=json"}
	if err := s.spawn("kube-apiserver", apiserver, s.apiserverArgs...); err != nil {
		return nil, err
	}
	cfg := &rest.Config{Host: "https://127.0.0.1:" + strconv.Itoa(ports[2]), BearerToken: files.token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 500, Burst: 1000}
	if err := waitReady(cfg, 90*time.Second, s.procs); err != nil {
		return nil, fmt.Errorf("%w; logs in %s", err, dir)
	}
	if s.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	s.Config = cfg
	if err := s.InstallCSIDrivers(UpstreamCSIDrivers...); err != nil {
		return nil, err
	}
	if err := SetCephCSIConfig(context.Background(), s.Client, []byte(CephCSIConfig)); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// Upgrade stops the release's processes (its hollow kubelets,
// kube-controller-manager and kube-apiserver, last started first) and
// starts release r's kube-apiserver on the same etcd data, address,
// certificates and tokens: the control plane upgraded in place. etcd and
// the processes spawned against the server (drivers, sidecars) keep
// running, as a cluster's workloads do, and reconnect. Kubernetes'
// processes started afterwards are of r. The stopped processes' logs are
// kept under their names with the old release's version appended
// (Logs(name + "-" + version)).
func (s *Server) Upgrade(log io.Writer, r Release) error {
	apiserver, err := r.binary("kube-apiserver", log)
	if err != nil {
		return err
	}
	if len(s.apiserverArgs) == 0 {
		return errors.New("testenv: Upgrade: the server is not running")
	}
	kept := s.procs[:0:0]
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		if p.name != "kube-apiserver" && p.name != "kube-controller-manager" && !strings.HasPrefix(p.name, "hollow-node-") {
			kept = append([]*proc{p}, kept...)
			continue
		}
		stopProc(p)
		p.log.Close()
		_ = os.Rename(p.log.Name(), strings.TrimSuffix(p.log.Name(), ".log")+"-"+s.release.Version+".log")
	}
	s.procs = kept
	s.logs = s.logs[:0]
	for _, p := range kept {
		s.logs = append(s.logs, p.log)
	}
	s.release = r
	if err := s.spawn("kube-apiserver", apiserver, s.apiserverArgs...); err != nil {
		return err
	}
	return waitReady(s.Config, 90*time.Second, s.procs[len(s.procs)-1:])
}

// stopProc interrupts a process and waits for it, killing it after 10 s.
func stopProc(p *proc) {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// authFiles are the files kube-apiserver authenticates and audits with:
// the service account signing key and its public key, the audit policy,
// and the static token file, which holds token, an admin's.
type authFiles struct {
	key, pub, policy, tokens, token string
}

// writeAuthFiles writes the authFiles into dir.
func writeAuthFiles(dir string) (authFiles, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return authFiles{}, err
	}
	keyFile, pubFile := filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return authFiles{}, err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return authFiles{}, err
	}
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return authFiles{}, err
	}
	// The audit log records what service accounts do (a test of a
	// component's RBAC reads it: AuditLog); nothing else is logged.
	policyFile := filepath.Join(dir, "audit-policy.yaml")
	policy := "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n  userGroups: [\"system:serviceaccounts\"]\n- level: None\n"
	if err := os.WriteFile(policyFile, []byte(policy), 0o600); err != nil {
		return authFiles{}, err
	}
	token := strconv.FormatInt(time.Now().UnixNano(), 36) + "csimigrate"
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(token+",admin,admin,system:masters\n"), 0o600); err != nil {
		return authFiles{}, err
	}
	return authFiles{key: keyFile, pub: pubFile, policy: policyFile, tokens: tokenFile, token: token}, nil
}

// UpstreamCSIDrivers are the CSIDriver objects every started server has:
// Ceph CSI's and the vSphere CSI driver's under their upstream names, as a
// cluster that runs them from their charts and manifests has them.
var UpstreamCSIDrivers = []string{plugin.RBDDriverName, plugin.CephFSDriverName, plugin.VSphereDriverName}

// CephCSIConfig is the config.json of the Ceph CSI config map every
// started server has (SetCephCSIConfig): the entry of Monitor, which the
// objects of this package's helpers name.
const CephCSIConfig = `[{"clusterID":"b7f67366bb43f32e07d8a261a7840da9","monitors":["` + Monitor + `"]}]`

// SetCephCSIConfig makes cfg the config.json of Ceph CSI's config map as
// its deploy/ manifests install it (ConfigMap ceph-csi/ceph-csi-config),
// creating the namespace and the map where they do not exist: what the
// commands read to tell whether the driver serves a volume's cluster.
func SetCephCSIConfig(ctx context.Context, c kubernetes.Interface, cfg []byte) error {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ceph-csi"}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace ceph-csi: %w", err)
	}
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ceph-csi", Name: "ceph-csi-config"}, Data: map[string]string{"config.json": string(cfg)}}
	_, err := c.CoreV1().ConfigMaps("ceph-csi").Update(ctx, cm, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = c.CoreV1().ConfigMaps("ceph-csi").Create(ctx, cm, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing ConfigMap ceph-csi/ceph-csi-config: %w", err)
	}
	return nil
}

// RemoveCSIDrivers deletes the CSIDriver objects of these names, for a test
// of a cluster whose drivers are not installed yet.
func (s *Server) RemoveCSIDrivers(names ...string) error {
	for _, n := range names {
		if err := s.Client.StorageV1().CSIDrivers().Delete(context.Background(), n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting CSIDriver %s: %w", n, err)
		}
	}
	return nil
}

// InstallCSIDrivers creates CSIDriver objects of these names (as a
// driver's deployment does), for the commands that read which drivers the
// cluster has.
func (s *Server) InstallCSIDrivers(names ...string) error {
	for _, n := range names {
		d := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: n}}
		if _, err := s.Client.StorageV1().CSIDrivers().Create(context.Background(), d, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating CSIDriver %s: %w", n, err)
		}
	}
	return nil
}

func (s *Server) spawn(name, bin string, args ...string) error {
	return s.spawnEnv(name, nil, bin, args...)
}

// spawnEnv is spawn with env added to this process's environment.
func (s *Server) spawnEnv(name string, env []string, bin string, args ...string) error {
	f, err := os.Create(filepath.Join(s.dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := StartOwned(cmd); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: f, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	s.procs = append(s.procs, p)
	s.logs = append(s.logs, f)
	return nil
}

func waitReady(cfg *rest.Config, timeout time.Duration, procs []*proc) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback test server with a self-signed certificate
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		for _, p := range procs {
			select {
			case <-p.done:
				return fmt.Errorf("%s %w (%v); last answer: %s", filepath.Base(p.cmd.Path), errExited, p.err, last)
			default:
			}
		}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, cfg.Host+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+cfg.BearerToken)
		resp, err := client.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))
		} else {
			last = err.Error()
		}
		time.Sleep(250 * time.Millisecond)
	}
	return errors.New("kube-apiserver not ready: " + last)
}

// Stop stops the processes and removes the directory (kept when
// CSIMIGRATE_KEEP_APISERVER is set, for its logs).
func (s *Server) Stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		stopProc(s.procs[i])
	}
	for _, f := range s.logs {
		f.Close()
	}
	if os.Getenv("CSIMIGRATE_KEEP_APISERVER") == "" {
		os.RemoveAll(s.dir)
		for _, d := range s.cleanup {
			os.RemoveAll(d)
		}
	}
}

// VolumeControllers are the kube-controller-manager controllers that bind
// claims to PVs and guard them: what a rewrite of PVs must keep satisfied.
var VolumeControllers = []string{"persistentvolume-binder-controller", "persistentvolume-protection-controller", "persistentvolumeclaim-protection-controller"}

// StartControllerManager starts kube-controller-manager against the server
// with the given controllers; Stop stops it first. It fails when the process
// exits within its first two seconds.
func (s *Server) StartControllerManager(log io.Writer, controllers ...string) error {
	return s.StartControllerManagerWith(log, "", controllers...)
}

// StartControllerManagerWith is StartControllerManager with feature gates
// ("" for the defaults).
func (s *Server) StartControllerManagerWith(log io.Writer, featureGates string, controllers ...string) error {
	var flags []string
	if featureGates != "" {
		flags = append(flags, "--feature-gates="+featureGates)
	}
	return s.StartControllerManagerFlags(log, flags, controllers...)
}

// StartControllerManagerFlags is StartControllerManager with more flags of
// kube-controller-manager (such as --feature-gates or
// --attach-detach-reconcile-sync-period).
func (s *Server) StartControllerManagerFlags(log io.Writer, flags []string, controllers ...string) error {
	r := s.release
	bin, err := r.binary("kube-controller-manager", log)
	if err != nil {
		return err
	}
	kc, err := s.WriteKubeconfig()
	if err != nil {
		return err
	}
	args := []string{"--kubeconfig=" + kc, "--leader-elect=false", "--secure-port=0",
		"--controllers=" + strings.Join(controllers, ","), "--pvclaimbinder-sync-period=2s"}
	args = append(args, flags...)
	if err := s.spawn("kube-controller-manager", bin, args...); err != nil {
		return err
	}
	p := s.procs[len(s.procs)-1]
	select {
	case <-p.done:
		return fmt.Errorf("kube-controller-manager exited: %v\n%s", p.err, s.Logs("kube-controller-manager"))
	case <-time.After(2 * time.Second):
		return nil
	}
}

// StartHollowNode starts a kubemark hollow kubelet named node against the
// server: the real kubelet (of the server's release) with a fake container runtime and
// mounter, attach/detach left to kube-controller-manager, on a loopback port
// of its own, with the given kubelet feature gates ("" for the defaults). It returns the kubelet's root directory
// (where plugins_registry is) once the Node is Ready and the registry is
// there; Stop stops it first.
func (s *Server) StartHollowNode(log io.Writer, node, featureGates string) (string, error) {
	r := s.release
	bin, err := r.binary("hollow-node", log)
	if err != nil {
		return "", err
	}
	kc, err := s.WriteKubeconfig()
	if err != nil {
		return "", err
	}
	port, err := freePort()
	if err != nil {
		return "", err
	}
	args := []string{"-kubeconfig=" + kc, "-name=" + node, fmt.Sprintf("-port=%d", port), "-v=4"}
	if featureGates != "" {
		args = append(args, "-feature-gates="+featureGates)
	}
	name := "hollow-node-" + node
	if err := s.Spawn(name, bin, args...); err != nil {
		return "", err
	}
	root := regexp.MustCompile(`Using (\S+) as root dir for hollow-kubelet`)
	deadline := time.Now().Add(90 * time.Second)
	dir := ""
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(filepath.Join(s.dir, name+".log"))
		if m := root.FindSubmatch(b); m != nil {
			dir = string(m[1])
		}
		n, err := s.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		// The kubelet names its root dir before it makes the plugin
		// registry there; a Node an earlier kubelet left Ready (an upgrade)
		// is Ready at once, so both are waited for.
		if _, regErr := os.Stat(filepath.Join(dir, "plugins_registry")); err == nil && dir != "" && regErr == nil {
			for _, c := range n.Status.Conditions {
				if c.Type == "Ready" && c.Status == "True" {
					s.cleanup = append(s.cleanup, dir)
					return dir, nil
				}
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	return "", fmt.Errorf("hollow node %s not Ready after 90 s (root dir %q):\n%s", node, dir, s.Logs(name))
}

// Spawn starts another process that works against the server (a
// controller, a CSI sidecar); its output goes to a log Logs(name) reads, and
// Stop stops it first, by pid. It fails when the process exits within its
// first two seconds.
func (s *Server) Spawn(name, bin string, args ...string) error {
	return s.SpawnEnv(name, nil, bin, args...)
}

// SpawnEnv is Spawn with env ("KEY=value") added to the process's
// environment.
func (s *Server) SpawnEnv(name string, env []string, bin string, args ...string) error {
	if err := s.spawnEnv(name, env, bin, args...); err != nil {
		return err
	}
	p := s.procs[len(s.procs)-1]
	select {
	case <-p.done:
		return fmt.Errorf("%s exited: %v\n%s", name, p.err, s.Logs(name))
	case <-time.After(2 * time.Second):
		return nil
	}
}

// AuditLog is the path of the API server's audit log: one JSON event per
// line, at level Metadata, for the requests of service accounts only.
func (s *Server) AuditLog() string { return filepath.Join(s.dir, "audit.log") }

// Logs returns the tail of a process's log ("etcd", "kube-apiserver" or
// "kube-controller-manager").
func (s *Server) Logs(name string) string {
	b, _ := os.ReadFile(filepath.Join(s.dir, name+".log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// LogPath is the path of a process's whole log (Logs has its tail).
func (s *Server) LogPath(name string) string { return filepath.Join(s.dir, name+".log") }

// WriteKubeconfig writes a kubeconfig for the server (token auth, the
// self-signed certificate not verified) and returns its path.
func (s *Server) WriteKubeconfig() (string, error) {
	path := filepath.Join(s.dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: %s
contexts:
- name: test
  context: {cluster: test, user: admin}
current-context: test
`, s.Config.Host, s.Config.BearerToken)
	return path, os.WriteFile(path, []byte(cfg), 0o600)
}

package vspheretest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/apply/testenv"
)

// DriverVersion is the vSphere CSI driver release scripts/setup-vsphere
// builds (sigs.k8s.io/vsphere-csi-driver/v3, from the module proxy).
const DriverVersion = "v3.7.0"

// driverNamespace is where the driver's feature states live.
const driverNamespace = "vmware-system-csi"

// driverBinary is the driver's controller binary: CSIMIGRATE_VSPHERE_CSI,
// or what scripts/setup-vsphere built into the user cache.
func driverBinary() (string, error) {
	if p := os.Getenv("CSIMIGRATE_VSPHERE_CSI"); p != "" {
		return p, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(cache, "csimigrate", "vsphere-csi-"+DriverVersion)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("the vSphere CSI driver %s is not built (run scripts/setup-vsphere): %w", DriverVersion, err)
	}
	return p, nil
}

// driverConf is the driver's csi-vsphere.conf for vc, with the password
// given (gcfg quoting, which Go's %q matches for printable ASCII).
func driverConf(vc *VCenter, password string) string {
	return fmt.Sprintf("[Global]\ncluster-id = %q\n\n[VirtualCenter %q]\ninsecure-flag = \"true\"\nuser = %q\npassword = %q\nport = %q\ndatacenters = %q\n",
		ClusterID, vc.Host, User, password, vc.Port, vc.Datacenter.Name())
}

// bounded gives each call to the driver at most two minutes where its
// context has no deadline of its own: a call the driver never answers fails
// the test that made it instead of hanging it. (The driver did now and then
// never answer, until vcsim was built with the fix of its ListView deadlock:
// scripts/build-vcsim.)
func bounded(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// Driver is a running vSphere CSI driver controller.
type Driver struct {
	Controller csi.ControllerClient
	Identity   csi.IdentityClient
	srv        *testenv.Server
}

// StartDriver starts the vSphere CSI driver's controller against vc and
// the kube-apiserver srv (its process is the server's, stopped with it),
// and waits until it answers Probe ready. It fails the test when it cannot
// start.
func StartDriver(t *testing.T, srv *testenv.Server, vc *VCenter) *Driver {
	t.Helper()
	bin, err := driverBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := srv.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: driverNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fss := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "internal-feature-states.csi.vsphere.vmware.com", Namespace: driverNamespace},
		Data: map[string]string{"csi-migration": "true", "trigger-csi-fullsync": "false"}}
	if _, err := srv.Client.CoreV1().ConfigMaps(driverNamespace).Create(ctx, fss, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc, err := srv.WriteKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	// The driver watches its configuration's directory: nothing else
	// goes there.
	confDir, sockDir := t.TempDir(), t.TempDir()
	conf := filepath.Join(confDir, "csi-vsphere.conf")
	if err := os.WriteFile(conf, []byte(driverConf(vc, vc.Password)), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(sockDir, "csi.sock")
	env := []string{"KUBECONFIG=" + kc, "CSI_NAMESPACE=" + driverNamespace, "X_CSI_MODE=controller", "CSI_ENDPOINT=unix://" + sock,
		"VSPHERE_CSI_CONFIG=" + conf, "X_CSI_DEBUG=true", "LOGGER_LEVEL=DEVELOPMENT"}
	if err := srv.SpawnEnv("vsphere-csi", env, bin, "--fss-name="+fss.Name, "--fss-namespace="+driverNamespace); err != nil {
		t.Fatalf("the vSphere CSI driver: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("vsphere-csi:\n%s", srv.Logs("vsphere-csi"))
		}
	})
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(bounded))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	d := &Driver{Controller: csi.NewControllerClient(conn), Identity: csi.NewIdentityClient(conn), srv: srv}
	deadline := time.Now().Add(60 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := d.Identity.Probe(pctx, &csi.ProbeRequest{})
		cancel()
		if err == nil && (resp.Ready == nil || resp.Ready.Value) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("the vSphere CSI driver is not ready after 60 s: %v\n%s", err, srv.Logs("vsphere-csi"))
		}
		time.Sleep(time.Second)
	}
}

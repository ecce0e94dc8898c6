package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/plan"
)

// kubectlPlugin puts the command as kubectl-csimigrate in a directory and
// returns a PATH that puts it first.
func kubectlPlugin(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("kubectl (Debian's kubectl package) is needed to run the plugin: %v", err)
	}
	dir := t.TempDir()
	if err := os.Symlink(commandBinary(t), filepath.Join(dir, "kubectl-csimigrate")); err != nil {
		t.Fatal(err)
	}
	return dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// runPath runs a program with PATH set and returns stdout, stderr and the
// exit code.
func runPath(t *testing.T, path string, name string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "PATH="+path)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return out.String(), errb.String(), code
}

// kubectl's habits: the command works as the kubectl plugin
// kubectl-csimigrate, with kubectl's flag spellings (--kubeconfig,
// --context, --namespace), and --context picks the kubeconfig's context as
// kubectl does.
func TestKubectlPlugin(t *testing.T) {
	path := kubectlPlugin(t)
	direct, _, code := runCmd(t, "", "plan", "-o", "json", "-f", "testdata/field/secrets.yaml")
	out, stderr, pcode := runPath(t, path, "kubectl", "csimigrate", "plan", "-o", "json", "-f", "testdata/field/secrets.yaml")
	if pcode != code || out != direct {
		t.Errorf("kubectl csimigrate plan: exit %d (direct %d)\n%s\n%s", pcode, code, out, stderr)
	}
	// --namespace, as kubectl spells it, names the namespace of objects
	// that have none.
	out, _, _ = runPath(t, path, "kubectl", "csimigrate", "plan", "-o", "json", "--namespace", "ceph-apps", "-f", "testdata/field/inline-ceph.yaml")
	var p plan.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil || secretPlanned(&p, "ceph-apps", "ceph-secret-csi-admin") == nil {
		t.Errorf("--namespace: %v %+v", err, p.Secrets)
	}

	// A kubeconfig whose current context points nowhere, and a context
	// "test" for the real server.
	_, kc := startServer(t)
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	real := cfg.Contexts[cfg.CurrentContext]
	cfg.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.Contexts["nowhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: real.AuthInfo}
	cfg.Contexts["test"] = real
	cfg.CurrentContext = "nowhere"
	two := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, two); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runPath(t, path, "kubectl", "csimigrate", "plan", "--live", "--kubeconfig", two)
	if code != cli.ExitInput || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("the current context (nowhere): exit %d: %s", code, stderr)
	}
	out, stderr, code = runPath(t, path, "kubectl", "csimigrate", "plan", "--live", "--kubeconfig", two, "--context", "test", "-o", "json")
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &p) != nil {
		t.Errorf("--context test: exit %d\n%s\n%s", code, out, stderr)
	}
	_, stderr, code = runPath(t, path, "kubectl", "csimigrate", "plan", "--live", "--kubeconfig", two, "--context", "absent")
	if code != cli.ExitInput || !strings.Contains(stderr, "absent") {
		t.Errorf("--context absent: exit %d: %s", code, stderr)
	}
}

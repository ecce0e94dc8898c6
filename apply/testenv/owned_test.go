package testenv

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// childEnv, when set, makes TestServersDieWithTestBinary the child it
// runs: the value is the directory the child reports into.
const childEnv = "CSIMIGRATE_TESTENV_CHILD"

// A test binary that dies on its -timeout (the panic "test timed out", which
// runs no cleanup) leaves no server behind: the test runs itself as a child
// with a short -timeout and its temporary directory inside a fresh one;
// the child's TestMain starts etcd and kube-apiserver, the child test adds
// kube-controller-manager, writes the pids and waits for the timeout. Once
// the child has died, no process it started may be alive, and none may
// name the child's temporary directory in its command line.
func TestServersDieWithTestBinary(t *testing.T) {
	if dir := os.Getenv(childEnv); dir != "" {
		holdServers(t, dir)
		return
	}
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	out := RunUntilTimeout(t, "TestServersDieWithTestBinary", time.Minute, childEnv+"="+dir, "TMPDIR="+tmp)
	b, err := os.ReadFile(filepath.Join(dir, "pids"))
	if err != nil {
		t.Fatalf("the child never reported its servers started: %v\n%s", err, tailOf(out))
	}
	pids := strings.Fields(string(b))
	if len(pids) != 3 {
		t.Fatalf("the child reported %d processes, want etcd, kube-apiserver and kube-controller-manager: %q", len(pids), pids)
	}
	alive := Left(15*time.Second, func() []string {
		var alive []string
		for _, pid := range pids {
			if p, err := strconv.Atoi(pid); err == nil && Running(p) {
				alive = append(alive, "pid "+pid)
			}
		}
		return append(alive, naming(tmp)...)
	})
	if len(alive) > 0 {
		t.Errorf("left running after the test binary died on its timeout: %s", strings.Join(alive, "; "))
	}
}

// holdServers is the child: it adds kube-controller-manager to the
// package's server, reports the pids into dir and waits for its timeout.
func holdServers(t *testing.T, dir string) {
	if err := server.StartControllerManager(os.Stderr, VolumeControllers...); err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, p := range server.procs {
		pids = append(pids, strconv.Itoa(p.cmd.Process.Pid))
	}
	if err := os.WriteFile(filepath.Join(dir, "pids"), []byte(strings.Join(pids, " ")), 0o644); err != nil {
		t.Fatal(err)
	}
	select {} // until -timeout
}

// naming lists the live processes whose command line names path.
func naming(path string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if p, err := strconv.Atoi(e.Name()); err != nil || !Running(p) {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(path)) {
			out = append(out, fmt.Sprintf("pid %s: %s", e.Name(), strings.ReplaceAll(string(b), "\x00", " ")))
		}
	}
	return out
}

func tailOf(s string) string {
	if len(s) > 3000 {
		return s[len(s)-3000:]
	}
	return s
}

package cephtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/csimigrate/csimigrate/apply/testenv"
)

const reapChildEnv = "CSIMIGRATE_CEPHTEST_REAP_CHILD"

// A test binary that dies on its -timeout leaves nothing of what the reaper
// covers: the test runs itself as a child with a 5 s -timeout; the child
// starts a detached process naming its root (as ceph-fuse does: its own
// session, no parent-death signal), mounts a tmpfs under the root (as a
// ceph-fuse mount), registers the restoration of a file outside the root
// (as Ceph CSI's fixed paths) and waits for its timeout. After the child's
// death the process is gone, nothing is mounted under the root, the file
// is put back and the root is removed.
func TestCephReaperCleansUpAfterTimeout(t *testing.T) {
	if dir := os.Getenv(reapChildEnv); dir != "" {
		reapChild(t, dir)
		return
	}
	dir := t.TempDir()
	fixed := filepath.Join(dir, "fixed")
	if err := os.WriteFile(fixed, []byte("original"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := testenv.RunUntilTimeout(t, "TestCephReaperCleansUpAfterTimeout", 5*time.Second, reapChildEnv+"="+dir)
	b, err := os.ReadFile(filepath.Join(dir, "report"))
	if err != nil {
		t.Fatalf("the child did not report: %v\n%s", err, out)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		t.Fatalf("the child's report: %q", b)
	}
	root, pid := f[0], f[1]
	left := testenv.Left(15*time.Second, func() []string {
		var left []string
		if p, err := strconv.Atoi(pid); err == nil && testenv.Running(p) {
			left = append(left, "the detached process "+pid)
		}
		if m, _ := os.ReadFile("/proc/mounts"); bytes.Contains(m, []byte(root)) {
			left = append(left, "a mount under "+root)
		}
		if b, _ := os.ReadFile(fixed); string(b) != "original" {
			left = append(left, "the fixed path holds "+strconv.Quote(string(b)))
		}
		if _, err := os.Stat(root); err == nil {
			left = append(left, "the root "+root)
		}
		return left
	})
	if len(left) > 0 {
		t.Errorf("left after the test binary died on its timeout: %s", strings.Join(left, "; "))
	}
}

// reapChild is the child: what a Ceph test leaves when it dies.
func reapChild(t *testing.T, dir string) {
	root := reaper.Root
	fixed := filepath.Join(dir, "fixed")
	b, err := os.ReadFile(fixed)
	if err != nil {
		t.Fatal(err)
	}
	line, err := reaper.Keep(fixed, b, 0o644)
	if err == nil {
		err = reaper.OnDeath(line)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fixed, []byte("changed by the test"), 0o644); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(root, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v %s", err, out)
	}
	follow := filepath.Join(root, "detached")
	if err := os.WriteFile(follow, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sleep := exec.Command("tail", "-f", follow)
	sleep.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report"), []byte(root+" "+strconv.Itoa(sleep.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	select {} // until -timeout
}

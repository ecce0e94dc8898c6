package cephtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/csimigrate/csimigrate/internal/shell"
)

// A test binary that dies (its -timeout's panic, a kill) runs no cleanup.
// The processes it started itself die with it (their parent-death signal),
// but not the ceph-fuse daemons that Ceph CSI and the admin mount start
// (they detach), nor their mounts, nor Ceph CSI's fixed paths under /etc and
// /tmp/csi. A reaper does that: a shell started in a session of its own,
// reading a pipe only the test binary holds. When the pipe ends without the
// word that all went well, the reaper kills every process whose command
// line names the root directory under which the package keeps everything
// (the package's TMPDIR), unmounts what is mounted under it, runs the lines
// that put the fixed paths back, and removes the root.

// reaperScript is what the reaper runs; CSIMIGRATE_REAP_ROOT names the root
// (in the environment, so that the reaper's own command line does not name
// it).
const reaperScript = `root=$CSIMIGRATE_REAP_ROOT
cat >/dev/null
[ -e "$root/.done" ] && exit 0
for pid in $(pgrep -f -- "$root"); do
  [ "$pid" = "$$" ] || kill -KILL "$pid" 2>/dev/null
done
sleep 1
awk -v r="$root" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
[ -f "$root/on-death.sh" ] && bash "$root/on-death.sh"
rm -rf "$root"
`

// Reaper is the running reaper of a root directory.
type Reaper struct {
	// Root is the directory everything the package starts lives under.
	Root string
	pipe *os.File
	// exited is closed when the reaper has exited.
	exited chan struct{}
	mu     sync.Mutex
	n      int
}

// reaper is the package's reaper while its tests run (TestMain starts it);
// the fixed paths the drivers change register their restoration with it.
var reaper *Reaper

// StartReaper makes a root directory and starts its reaper.
func StartReaper() (*Reaper, error) {
	root, err := os.MkdirTemp("", "csimigrate-cephtest-")
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		os.Remove(root)
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command("bash", "-c", reaperScript)
	cmd.Env = append(os.Environ(), "CSIMIGRATE_REAP_ROOT="+root)
	// Its own session: no signal to the test's process group reaches it,
	// and no parent-death signal. Standard output and error go nowhere, so
	// that go test does not wait for the reaper's end.
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		os.Remove(root)
		return nil, fmt.Errorf("starting the reaper: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	return &Reaper{Root: root, pipe: w, exited: exited}, nil
}

// OnDeath adds shell lines the reaper runs, after the kills and unmounts,
// if the test binary dies.
func (r *Reaper) OnDeath(lines ...string) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(r.Root, "on-death.sh"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
	return errors.Join(err, f.Close())
}

// Keep copies path into the root and returns a shell line that copies it
// back.
func (r *Reaper) Keep(path string, b []byte, mode os.FileMode) (string, error) {
	if r == nil {
		return "", nil
	}
	r.mu.Lock()
	r.n++
	n := r.n
	r.mu.Unlock()
	saved := filepath.Join(r.Root, ".saved", strconv.Itoa(n))
	if err := os.MkdirAll(filepath.Dir(saved), 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(saved, b, mode); err != nil {
		return "", err
	}
	return fmt.Sprintf("cp -p %s %s", shell.Quote(saved), shell.Quote(path)), nil
}

// Done tells the reaper that the test binary cleaned up itself, ends it and
// removes the root if nothing was kept in it.
func (r *Reaper) Done() {
	_ = os.WriteFile(filepath.Join(r.Root, ".done"), nil, 0o600)
	r.pipe.Close()
	<-r.exited
	os.Remove(filepath.Join(r.Root, "on-death.sh"))
	os.RemoveAll(filepath.Join(r.Root, ".saved"))
	os.Remove(filepath.Join(r.Root, ".done"))
	os.Remove(r.Root) // kept logs (CSIMIGRATE_KEEP_CEPH, a failed start) stay
}

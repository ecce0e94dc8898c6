// Package cephtest runs a one-node Ceph cluster and Ceph CSI's own drivers
// on loopback, so that tests judge csimigrate's output by what the running
// driver does to real images and file systems.
//
// Everything runs from a temporary directory: a monitor, a manager, one
// memstore OSD (no block device), a metadata server with one file system,
// and Ceph CSI's RBD controller and CephFS node server serving CSI on unix
// sockets. Ceph CSI reads fixed paths (/etc/ceph-csi-config/config.json,
// /etc/ceph/, /tmp/csi/keys); the environment saves what was there and puts
// it back when it stops, so it must run as root. Every process it starts is
// stopped by pid, and dies with the test process if that is killed.
//
// ../scripts/setup-ceph installs the Ceph packages and builds cephcsi; a
// test that needs the cluster fails, never skips, when it cannot start.
package cephtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/csimigrate/csimigrate/apply/testenv"
)

// CephCSIVersion is the Ceph CSI release the drivers are built from.
const CephCSIVersion = "v3.12.2"

// Monitor addresses: the cluster's one monitor listens on Ceph's default
// ports, so that a monitor written without a port reaches it too.
const (
	MonitorV1 = "127.0.0.1:6789"
	MonitorV2 = "127.0.0.1:3300"
)

// FSName is the CephFS file system the cluster has.
const FSName = "myfs"

// Cluster is a running one-node Ceph cluster.
type Cluster struct {
	// Dir holds the configuration, data, logs and sockets.
	Dir string
	// Conf is the path of the cluster's ceph.conf.
	Conf string
	// AdminKey is client.admin's cephx key.
	AdminKey string

	mu    sync.Mutex
	procs []*proc
	keep  bool
}

// proc is a started process; done is closed when it has exited.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error
}

// CephCSIBinary returns the path of the cached cephcsi build (the one
// ../scripts/setup-ceph makes), or CSIMIGRATE_CEPHCSI.
func CephCSIBinary() (string, error) {
	return cachedBinary("CSIMIGRATE_CEPHCSI", "cephcsi", CephCSIVersion)
}

// cachedBinary returns $env, else the build ../scripts/setup-ceph leaves
// in the user cache directory as NAME-VERSION, failing when it is missing.
func cachedBinary(env, name, version string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return p, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(cache, "csimigrate", name+"-"+version)
	if st, err := os.Stat(bin); err != nil || !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s %s not found at %s: run scripts/setup-ceph", name, version, bin)
	}
	return bin, nil
}

// StartCluster bootstraps and starts a monitor, a manager and one memstore
// OSD, and, with fs, a metadata server and the file system FSName. It
// fails when a Ceph tool is missing, when Ceph's default monitor ports are
// taken, or when the cluster is not healthy within two minutes.
func StartCluster(ctx context.Context, fs bool) (_ *Cluster, err error) {
	if err := checkHost(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "csimigrate-ceph-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "ceph.conf"), keep: os.Getenv("CSIMIGRATE_KEEP_CEPH") != ""}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w (logs in %s)", err, dir)
			c.keep = true
			c.Stop()
		}
	}()
	for _, d := range []string{"run", "log", "mon/ceph-a", "mgr/ceph-x", "osd/ceph-0", "mds/ceph-a"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	fsid := newUUID()
	conf := fmt.Sprintf(confTemplate, fsid, dir, MonitorV2, MonitorV1)
	if err := os.WriteFile(c.Conf, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	if err := c.startMon(ctx, fsid); err != nil {
		return nil, err
	}
	if err := c.startMgr(ctx); err != nil {
		return nil, err
	}
	if err := c.startOSD(ctx); err != nil {
		return nil, err
	}
	if err := c.waitFor(ctx, 60*time.Second, "the manager to become available", func() (bool, error) {
		out, err := c.Ceph(ctx, "mgr", "stat", "-f", "json")
		if err != nil {
			return false, err
		}
		var st struct {
			Available bool `json:"available"`
		}
		return json.Unmarshal([]byte(out), &st) == nil && st.Available, nil
	}); err != nil {
		return nil, err
	}
	if fs {
		if err := c.startMDS(ctx); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// confTemplate is the test cluster's ceph.conf: its fsid, directory, and
// the monitor's v2 and v1 addresses.
//
// The monitor refuses to start (exit status 28, ENOSPC) when its file
// system has 5% or less space available, and warns under 30%: a cold
// run of the test command filled this machine's disk to 95% once (its
// Go build cache and the peers' builds). The test cluster keeps almost
// nothing on disk (a memstore OSD, a small monitor store), so neither
// threshold applies to it.
const confTemplate = `[global]
fsid = %[1]s
mon host = [v2:%[3]s,v1:%[4]s]
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon data avail crit = 0
mon data avail warn = 0
osd crush chooseleaf type = 0
ms bind ipv6 = false
osd objectstore = memstore
memstore device bytes = 3221225472
run dir = %[2]s/run
admin socket = %[2]s/run/$name.asok
log file = %[2]s/log/$name.log
pid file = %[2]s/run/$name.pid
mon data = %[2]s/mon/$cluster-$id
mgr data = %[2]s/mgr/$cluster-$id
osd data = %[2]s/osd/$cluster-$id
mds data = %[2]s/mds/$cluster-$id
[client]
keyring = %[2]s/client.admin.keyring
[mon]
keyring = %[2]s/mon.keyring
[mgr]
keyring = %[2]s/mgr/$cluster-$id/keyring
[osd]
keyring = %[2]s/osd/$cluster-$id/keyring
osd memory target = 536870912
[mds]
keyring = %[2]s/mds/$cluster-$id/keyring
`

// checkHost checks what the test cluster needs of this machine: root,
// Ceph's tools, and the monitor's ports free.
func checkHost() error {
	if os.Geteuid() != 0 {
		return errors.New("the Ceph test environment runs as root (Ceph CSI writes /etc/ceph and /tmp/csi)")
	}
	for _, tool := range []string{"ceph-mon", "ceph-mgr", "ceph-osd", "ceph-authtool", "monmaptool", "ceph", "rbd"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found: run scripts/setup-ceph (Debian's Ceph packages): %w", tool, err)
		}
	}
	for _, addr := range []string{MonitorV1, MonitorV2} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("the Ceph monitor's port %s is taken (another Ceph cluster running?): %w", addr, err)
		}
		l.Close()
	}
	return nil
}

// startMon creates the keyrings and the monitor of cluster fsid, starts
// it, and waits until it answers.
func (c *Cluster) startMon(ctx context.Context, fsid string) error {
	monKeyring, adminKeyring := filepath.Join(c.Dir, "mon.keyring"), filepath.Join(c.Dir, "client.admin.keyring")
	steps := [][]string{
		{"ceph-authtool", "--create-keyring", monKeyring, "--gen-key", "-n", "mon.", "--cap", "mon", "allow *"},
		{"ceph-authtool", "--create-keyring", adminKeyring, "--gen-key", "-n", "client.admin",
			"--cap", "mon", "allow *", "--cap", "osd", "allow *", "--cap", "mds", "allow *", "--cap", "mgr", "allow *"},
		{"ceph-authtool", monKeyring, "--import-keyring", adminKeyring},
		{"monmaptool", "--create", "--fsid", fsid, "--addv", "a", "[v2:" + MonitorV2 + ",v1:" + MonitorV1 + "]", filepath.Join(c.Dir, "monmap")},
		{"ceph-mon", "-c", c.Conf, "--mkfs", "-i", "a", "--monmap", filepath.Join(c.Dir, "monmap"), "--keyring", monKeyring},
	}
	for _, s := range steps {
		if _, err := run(ctx, nil, s[0], s[1:]...); err != nil {
			return err
		}
	}
	var err error
	if c.AdminKey, err = keyOf(adminKeyring); err != nil {
		return err
	}
	if err := c.spawn("ceph-mon", "ceph-mon", "-c", c.Conf, "-i", "a", "-f"); err != nil {
		return err
	}
	if _, err := c.retry(ctx, 30*time.Second, "ceph", "mon", "stat"); err != nil {
		return fmt.Errorf("the monitor did not answer: %w", err)
	}
	return nil
}

// startMgr creates the manager's key and starts it.
func (c *Cluster) startMgr(ctx context.Context) error {
	if _, err := c.Ceph(ctx, "auth", "get-or-create", "mgr.x", "mon", "allow profile mgr", "osd", "allow *", "mds", "allow *",
		"-o", filepath.Join(c.Dir, "mgr/ceph-x/keyring")); err != nil {
		return err
	}
	if err := c.spawn("ceph-mgr", "ceph-mgr", "-c", c.Conf, "-i", "x", "-f"); err != nil {
		return err
	}
	return nil
}

// startOSD creates the memstore OSD, starts it, and waits until it is up
// and in.
func (c *Cluster) startOSD(ctx context.Context) error {
	osdKey, err := run(ctx, nil, "ceph-authtool", "--gen-print-key")
	if err != nil {
		return err
	}
	osdUUID := newUUID()
	secret, _ := json.Marshal(map[string]string{"cephx_secret": strings.TrimSpace(osdKey)})
	id, err := run(ctx, bytes.NewReader(secret), "ceph", "-c", c.Conf, "osd", "new", osdUUID, "-i", "-")
	if err != nil {
		return err
	}
	if strings.TrimSpace(id) != "0" {
		return fmt.Errorf("ceph osd new gave id %q, want 0", strings.TrimSpace(id))
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "osd/ceph-0/keyring"), []byte("[osd.0]\n\tkey = "+strings.TrimSpace(osdKey)+"\n"), 0o600); err != nil {
		return err
	}
	if _, err := run(ctx, nil, "ceph-osd", "-c", c.Conf, "-i", "0", "--mkfs", "--osd-uuid", osdUUID); err != nil {
		return err
	}
	if err := c.spawn("ceph-osd", "ceph-osd", "-c", c.Conf, "-i", "0", "-f"); err != nil {
		return err
	}
	if err := c.waitFor(ctx, 60*time.Second, "the OSD to come up", func() (bool, error) {
		out, err := c.Ceph(ctx, "osd", "stat", "-f", "json")
		if err != nil {
			return false, err
		}
		var st struct {
			NumUpOSDs int `json:"num_up_osds"`
			NumInOSDs int `json:"num_in_osds"`
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			return false, err
		}
		return st.NumUpOSDs == 1 && st.NumInOSDs == 1, nil
	}); err != nil {
		return err
	}
	return nil
}

// startMDS starts one metadata server and creates the file system FSName.
func (c *Cluster) startMDS(ctx context.Context) error {
	if _, err := exec.LookPath("ceph-mds"); err != nil {
		return fmt.Errorf("ceph-mds not found: run scripts/setup-ceph: %w", err)
	}
	if _, err := c.Ceph(ctx, "auth", "get-or-create", "mds.a", "mon", "profile mds", "mgr", "profile mds", "mds", "allow *", "osd", "allow *",
		"-o", filepath.Join(c.Dir, "mds/ceph-a/keyring")); err != nil {
		return err
	}
	if err := c.spawn("ceph-mds", "ceph-mds", "-c", c.Conf, "-i", "a", "-f"); err != nil {
		return err
	}
	// The mgr's volumes module may take a moment to load.
	if _, err := c.retry(ctx, 60*time.Second, "ceph", "fs", "volume", "create", FSName); err != nil {
		return err
	}
	return c.waitFor(ctx, 60*time.Second, "the metadata server to become active", func() (bool, error) {
		out, err := c.Ceph(ctx, "fs", "status", FSName, "-f", "json")
		if err != nil {
			return false, nil
		}
		var st struct {
			MDSMap []struct {
				State string `json:"state"`
			} `json:"mdsmap"`
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			return false, nil
		}
		for _, m := range st.MDSMap {
			if m.State == "active" {
				return true, nil
			}
		}
		return false, nil
	})
}

// Ceph runs the ceph command as client.admin and returns its standard
// output.
func (c *Cluster) Ceph(ctx context.Context, args ...string) (string, error) {
	return run(ctx, nil, "ceph", append([]string{"-c", c.Conf, "--connect-timeout", "20"}, args...)...)
}

// RBD runs the rbd command as client.admin and returns its standard output.
func (c *Cluster) RBD(ctx context.Context, args ...string) (string, error) {
	return run(ctx, nil, "rbd", append([]string{"-c", c.Conf}, args...)...)
}

// retry runs a ceph command until it succeeds or the time is up.
func (c *Cluster) retry(ctx context.Context, d time.Duration, tool string, args ...string) (string, error) {
	var out string
	err := c.waitFor(ctx, d, tool+" "+strings.Join(args, " "), func() (bool, error) {
		var err error
		out, err = run(ctx, nil, tool, append([]string{"-c", c.Conf, "--connect-timeout", "5"}, args...)...)
		return err == nil, nil
	})
	return out, err
}

// waitFor polls cond every 250 ms until it is true, returns an error, or
// d has passed.
func (c *Cluster) waitFor(ctx context.Context, d time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(d)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if exited := c.exited(); exited != "" {
			return fmt.Errorf("waiting for %s: %s", what, exited)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", d, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// exited names a started process that has exited, with its log's tail.
func (c *Cluster) exited() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		select {
		case <-p.done:
			return fmt.Sprintf("%s exited (%v): %s", p.name, p.err, tail(p.log.Name(), 1500))
		default:
		}
	}
	return ""
}

// spawn starts a long-running process whose output goes to a log file in
// the cluster's directory. It is killed if the test process dies.
func (c *Cluster) spawn(name, bin string, args ...string) error {
	_, err := c.spawnProc(name, bin, args...)
	return err
}

// spawnProc is spawn, giving the process (for stopProcs).
func (c *Cluster) spawnProc(name, bin string, args ...string) (*proc, error) {
	f, err := os.Create(filepath.Join(c.Dir, "log", name+".out"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := testenv.StartOwned(cmd); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: f, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p, nil
}

// stopOne stops a process spawnProc started, and forgets it.
func (c *Cluster) stopOne(p *proc) {
	c.mu.Lock()
	i := slices.Index(c.procs, p)
	if i >= 0 {
		c.procs = slices.Delete(c.procs, i, i+1)
	}
	c.mu.Unlock()
	if i >= 0 {
		stopProc(p)
	}
}

// Log returns the tail of a started process's output, or of a Ceph
// daemon's log ("ceph-osd.0", "ceph-mgr.x", ...).
func (c *Cluster) Log(name string) string {
	if s := tail(filepath.Join(c.Dir, "log", name+".out"), 4000); s != "" {
		return s
	}
	return tail(filepath.Join(c.Dir, "log", name+".log"), 4000)
}

// Stop stops every process the cluster started, newest first, by pid
// (SIGTERM, SIGKILL after 10 s), and removes the directory unless a start
// failed or CSIMIGRATE_KEEP_CEPH is set.
func (c *Cluster) Stop() {
	c.mu.Lock()
	procs := c.procs
	c.procs = nil
	c.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		stopProc(procs[i])
	}
	if !c.keep {
		os.RemoveAll(c.Dir)
	}
}

func stopProc(p *proc) {
	// The process group: ceph-fuse and friends a driver started go too.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	p.log.Close()
}

// run runs a short command and returns its standard output; the error
// carries its standard error.
func run(ctx context.Context, stdin io.Reader, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		return out.String(), &CommandError{Args: append([]string{name}, args...), Err: err, Stderr: strings.TrimSpace(errb.String())}
	}
	return out.String(), nil
}

// CommandError is a failed command with what it wrote to standard error.
type CommandError struct {
	Args   []string
	Err    error
	Stderr string
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("%s: %v: %s", strings.Join(e.Args, " "), e.Err, e.Stderr)
}

func (e *CommandError) Unwrap() error { return e.Err }

// keyOf reads the first key of a keyring file.
func keyOf(keyring string) (string, error) {
	b, err := os.ReadFile(keyring)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && strings.TrimSpace(k) == "key" {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("no key in %s", keyring)
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// NewUUID returns a random version 4 UUID.
func NewUUID() string { return newUUID() }

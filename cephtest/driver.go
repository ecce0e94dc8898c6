package cephtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/csimigrate/csimigrate/internal/shell"
)

// The paths Ceph CSI reads and writes whatever its flags say.
const (
	// CephCSIConfigFile is where Ceph CSI reads its cluster map
	// (clusterID -> monitors), the config.json of its config map.
	CephCSIConfigFile = "/etc/ceph-csi-config/config.json"
	cephCSIKeysDir    = "/tmp/csi/keys"
	etcCephConf       = "/etc/ceph/ceph.conf"
	etcCephKeyring    = "/etc/ceph/keyring"
)

// Drivers are Ceph CSI's RBD controller and CephFS node and controller server, serving CSI
// on unix sockets.
type Drivers struct {
	// RBDSocket and CephFSSocket are the drivers' CSI endpoints.
	RBDSocket, CephFSSocket string
	// RBD is a client of the RBD driver's controller and identity services.
	RBD csi.ControllerClient
	// CephFS is a client of the CephFS driver's node service.
	CephFS csi.NodeClient
	// CephFSController is a client of the CephFS driver's controller
	// service.
	CephFSController csi.ControllerClient

	conns    []*grpc.ClientConn
	restore  []func() error
	c        *Cluster
	nprocs   int
	stopOnce bool
}

// StartDrivers writes configJSON to Ceph CSI's config path and starts
// cephcsi twice: the RBD controller (rbd.csi.ceph.com) and the CephFS node
// and controller server (cephfs.csi.ceph.com, which mounts with ceph-fuse). Stop stops
// them and puts back the fixed paths they used.
func (c *Cluster) StartDrivers(ctx context.Context, configJSON []byte) (_ *Drivers, err error) {
	bin, err := CephCSIBinary()
	if err != nil {
		return nil, err
	}
	d := &Drivers{c: c, RBDSocket: filepath.Join(c.Dir, "run", "rbd.sock"), CephFSSocket: filepath.Join(c.Dir, "run", "cephfs.sock")}
	defer func() {
		if err != nil {
			d.Stop()
		}
	}()
	for _, p := range []string{CephCSIConfigFile, etcCephConf, etcCephKeyring} {
		r, err := saveFile(p)
		if err != nil {
			return nil, err
		}
		d.restore = append(d.restore, r)
	}
	r, err := saveDir(cephCSIKeysDir)
	if err != nil {
		return nil, err
	}
	d.restore = append(d.restore, r)
	if err := d.SetConfig(configJSON); err != nil {
		return nil, err
	}
	c.mu.Lock()
	d.nprocs = len(c.procs)
	c.mu.Unlock()
	if err := c.spawn("cephcsi-rbd", bin, "--type=rbd", "--controllerserver=true", "--endpoint=unix://"+d.RBDSocket,
		"--csi-addons-endpoint=unix://"+filepath.Join(c.Dir, "run", "rbd-addons.sock"), "--nodeid=n1",
		"--drivername=rbd.csi.ceph.com", "--v=5", "--logtostderr=true"); err != nil {
		return nil, err
	}
	if err := c.spawn("cephcsi-cephfs", bin, "--type=cephfs", "--nodeserver=true", "--controllerserver=true", "--endpoint=unix://"+d.CephFSSocket,
		"--csi-addons-endpoint=unix://"+filepath.Join(c.Dir, "run", "cephfs-addons.sock"), "--nodeid=n1",
		"--drivername=cephfs.csi.ceph.com", "--v=5", "--logtostderr=true"); err != nil {
		return nil, err
	}
	for _, sock := range []string{d.RBDSocket, d.CephFSSocket} {
		if err := c.waitFor(ctx, 30*time.Second, "cephcsi to listen on "+sock, func() (bool, error) {
			_, err := os.Stat(sock)
			return err == nil, nil
		}); err != nil {
			return nil, err
		}
		conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, err
		}
		d.conns = append(d.conns, conn)
		id := csi.NewIdentityClient(conn)
		if err := c.waitFor(ctx, 30*time.Second, "cephcsi to answer Probe on "+sock, func() (bool, error) {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_, err := id.Probe(cctx, &csi.ProbeRequest{})
			return err == nil, nil
		}); err != nil {
			return nil, err
		}
	}
	d.RBD = csi.NewControllerClient(d.conns[0])
	d.CephFS = csi.NewNodeClient(d.conns[1])
	d.CephFSController = csi.NewControllerClient(d.conns[1])
	return d, nil
}

// NamedDriver is one more Ceph CSI driver, under a driver name of the
// test's choosing (as Rook runs Ceph CSI: rook-ceph.rbd.csi.ceph.com),
// reading the same config.json as the Drivers.
type NamedDriver struct {
	csi.ControllerClient
	// Node is its node service (CephFS only: the RBD node server needs
	// the rbd kernel module).
	Node     csi.NodeClient
	Identity csi.IdentityClient
	// Socket is its CSI endpoint.
	Socket string
	conn   *grpc.ClientConn
	p      *proc
	c      *Cluster
}

// StartRBDController starts Ceph CSI's RBD controller with
// --drivername=driverName on a socket of its own.
func (c *Cluster) StartRBDController(ctx context.Context, driverName string) (*NamedDriver, error) {
	return c.startNamed(ctx, "rbd", driverName, "--controllerserver=true")
}

// StartCephFSDriver starts Ceph CSI's CephFS node and controller server
// with --drivername=driverName on a socket of its own.
func (c *Cluster) StartCephFSDriver(ctx context.Context, driverName string) (*NamedDriver, error) {
	return c.startNamed(ctx, "cephfs", driverName, "--nodeserver=true", "--controllerserver=true")
}

func (c *Cluster) startNamed(ctx context.Context, typ, driverName string, servers ...string) (_ *NamedDriver, err error) {
	bin, err := CephCSIBinary()
	if err != nil {
		return nil, err
	}
	// Short: a unix socket's path has at most 107 bytes.
	short := strings.SplitN(driverName, ".", 2)[0] + "-" + typ
	sock := filepath.Join(c.Dir, "run", short+".sock")
	args := append([]string{"--type=" + typ}, servers...)
	args = append(args, "--endpoint=unix://"+sock, "--csi-addons-endpoint=unix://"+filepath.Join(c.Dir, "run", short+"-a.sock"),
		"--nodeid=n1", "--drivername="+driverName, "--v=5", "--logtostderr=true")
	p, err := c.spawnProc("cephcsi-"+driverName, bin, args...)
	if err != nil {
		return nil, err
	}
	r := &NamedDriver{Socket: sock, p: p, c: c}
	defer func() {
		if err != nil {
			r.Stop()
		}
	}()
	if err := c.waitFor(ctx, 30*time.Second, "cephcsi to listen on "+sock, func() (bool, error) {
		_, err := os.Stat(sock)
		return err == nil, nil
	}); err != nil {
		return nil, err
	}
	if r.conn, err = grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		return nil, err
	}
	r.ControllerClient, r.Node, r.Identity = csi.NewControllerClient(r.conn), csi.NewNodeClient(r.conn), csi.NewIdentityClient(r.conn)
	if err := c.waitFor(ctx, 30*time.Second, "cephcsi to answer Probe on "+sock, func() (bool, error) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := r.Identity.Probe(cctx, &csi.ProbeRequest{})
		return err == nil, nil
	}); err != nil {
		return nil, err
	}
	return r, nil
}

// Log is the tail of the driver's log.
func (r *NamedDriver) Log() string { return r.c.Log(r.p.name) }

// Stop stops the driver by pid (and the ceph-fuse mounts it started).
func (r *NamedDriver) Stop() {
	if r.conn != nil {
		r.conn.Close()
	}
	r.c.stopOne(r.p)
}

// SetConfig replaces Ceph CSI's config.json; the drivers read it on every
// call.
func (d *Drivers) SetConfig(configJSON []byte) error {
	if len(configJSON) == 0 {
		return errors.New("empty Ceph CSI config.json")
	}
	if err := os.MkdirAll(filepath.Dir(CephCSIConfigFile), 0o755); err != nil {
		return err
	}
	return os.WriteFile(CephCSIConfigFile, configJSON, 0o644)
}

// Log returns the tail of a driver's log: "cephcsi-rbd" or "cephcsi-cephfs".
func (d *Drivers) Log(name string) string { return d.c.Log(name) }

// Stop stops the drivers by pid (and any ceph-fuse they started) and puts
// back the fixed paths.
func (d *Drivers) Stop() {
	if d.stopOnce {
		return
	}
	d.stopOnce = true
	for _, conn := range d.conns {
		conn.Close()
	}
	c := d.c
	c.mu.Lock()
	var mine []*proc
	if d.nprocs <= len(c.procs) {
		mine = c.procs[d.nprocs:]
		c.procs = c.procs[:d.nprocs:d.nprocs]
	}
	c.mu.Unlock()
	for i := len(mine) - 1; i >= 0; i-- {
		stopProc(mine[i])
	}
	for i := len(d.restore) - 1; i >= 0; i-- {
		if err := d.restore[i](); err != nil {
			fmt.Fprintln(os.Stderr, "cephtest: restoring a fixed path:", err)
		}
	}
}

// saveFile remembers a file's content (or its absence) and returns what
// puts it back.
func saveFile(path string) (func() error, error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		st, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		line, err := reaper.Keep(path, b, st.Mode().Perm())
		if err == nil {
			err = reaper.OnDeath(line)
		}
		if err != nil {
			return nil, err
		}
		return func() error { return os.WriteFile(path, b, st.Mode().Perm()) }, nil
	case errors.Is(err, os.ErrNotExist):
		dir := filepath.Dir(path)
		_, derr := os.Stat(dir)
		lines := []string{"rm -f " + shell.Quote(path)}
		if errors.Is(derr, os.ErrNotExist) {
			lines = append(lines, "rmdir "+shell.Quote(dir))
		}
		if err := reaper.OnDeath(lines...); err != nil {
			return nil, err
		}
		return func() error {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			if errors.Is(derr, os.ErrNotExist) {
				return os.Remove(dir)
			}
			return nil
		}, nil
	default:
		return nil, err
	}
}

// saveDir makes sure a directory exists and returns what removes it again
// if it did not.
func saveDir(path string) (func() error, error) {
	if _, err := os.Stat(path); err == nil {
		return func() error { return nil }, nil
	}
	// The topmost directory that does not exist yet goes on restore.
	top := path
	for {
		parent := filepath.Dir(top)
		if _, err := os.Stat(parent); err == nil || parent == top {
			break
		}
		top = parent
	}
	if err := reaper.OnDeath("rm -rf " + shell.Quote(top)); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, err
	}
	return func() error { return os.RemoveAll(top) }, nil
}

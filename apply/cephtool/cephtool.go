// Package cephtool reaches a Ceph cluster through Ceph's own command-line
// tools (rbd, rados, ceph), as an admin would: with the standard
// --conf/--id/--keyring options or CEPH_ARGS, and optionally a prefix that
// runs them elsewhere, such as a Rook toolbox pod
// ("kubectl exec -n rook-ceph deploy/rook-ceph-tools --"). It never writes
// a key into an argument, an error or a log line: keys stay in the keyring
// file the tools read.
package cephtool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/internal/shell"
)

// Errors the tools report, for errors.Is.
var (
	// ErrNotFound: the image, pool or object does not exist.
	ErrNotFound = errors.New("not found in Ceph")
	// ErrExists: an exclusive create found the object there.
	ErrExists = errors.New("already exists in Ceph")
	// ErrNotSubvolume: Ceph's volumes module does not serve the path as a
	// subvolume (it does not exist, or a directory without an explicit
	// layout: "error in getxattr").
	ErrNotSubvolume = errors.New("not a subvolume Ceph's volumes module serves")
)

// Tools runs Ceph's tools. The zero value runs them from PATH with their
// default configuration.
type Tools struct {
	// Prefix is prepended to every command (a program and its arguments).
	Prefix []string
	// Conf, ID and Keyring are passed as --conf, --id and --keyring when
	// set.
	Conf, ID, Keyring string
	// Cache, when set, keeps what a pool and a file system keep while they
	// exist (a pool's ID; a file system's ID and metadata pool), so that
	// the adoption of many volumes reads them once per its TTL instead of
	// once or twice a volume (each a start of the ceph tool); nil: read
	// for every call. Copies of a Tools share it.
	Cache *Cache
}

// Cache is what Tools keeps of a cluster between calls (Tools.Cache), for
// a time-to-live: a pool or file system deleted and made again under its
// name gets a new ID, which a cached answer does not have until it
// expires. It is safe for concurrent use.
type Cache struct {
	ttl   time.Duration
	mu    sync.Mutex
	pools map[string]cachedAt[int64]
	fss   map[string]cachedAt[[]fsEntry]
	fsIDs map[string]cachedAt[int64]
}

type cachedAt[T any] struct {
	v  T
	at time.Time
}

// NewCache returns a Cache whose answers are reused for ttl.
func NewCache(ttl time.Duration) *Cache {
	return &Cache{ttl: ttl, pools: map[string]cachedAt[int64]{}, fss: map[string]cachedAt[[]fsEntry]{}, fsIDs: map[string]cachedAt[int64]{}}
}

// through is read's answer for key, from m while younger than the cache's
// TTL (a nil cache reads every time; a failed read is not kept).
func through[T any](c *Cache, m func(*Cache) map[string]cachedAt[T], key string, read func() (T, error)) (T, error) {
	if c == nil {
		return read()
	}
	c.mu.Lock()
	e, ok := m(c)[key]
	c.mu.Unlock()
	if ok && time.Since(e.at) < c.ttl {
		return e.v, nil
	}
	at := time.Now()
	v, err := read()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	m(c)[key] = cachedAt[T]{v, at}
	c.mu.Unlock()
	return v, nil
}

// Error is a tool that failed: the command (without secrets: none are in
// arguments) and what it printed on stderr.
type Error struct {
	Command string
	Stderr  string
	// ExitCode is the tool's exit status (the ceph tool's is the errno of
	// its answer); 0 when it did not run.
	ExitCode int
	Err      error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %v: %s", e.Command, e.Err, strings.TrimSpace(e.Stderr))
}

// Answer is what the tool answered, without the client library's warnings:
// its last line of errors ("Error ENODATA: error in getxattr").
func (e *Error) Answer() string {
	lines := strings.Split(strings.TrimSpace(toolErrors(e.Stderr)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// Unwrap gives the kind (ErrNotFound, ErrExists) or the exit error.
func (e *Error) Unwrap() error { return e.Err }

// Command is the argument vector a tool call runs, for review output.
func (t Tools) Command(tool string, args ...string) []string {
	cmd := append([]string{}, t.Prefix...)
	cmd = append(cmd, tool)
	if t.Conf != "" {
		cmd = append(cmd, "--conf", t.Conf)
	}
	if t.ID != "" {
		cmd = append(cmd, "--id", t.ID)
	}
	if t.Keyring != "" {
		cmd = append(cmd, "--keyring", t.Keyring)
	}
	return append(cmd, args...)
}

func (t Tools) run(ctx context.Context, tool string, args ...string) ([]byte, error) {
	argv := t.Command(tool, args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		kind := err
		switch s := toolErrors(errb.String()); {
		case strings.Contains(s, "(2) No such file or directory"):
			kind = ErrNotFound
		case strings.Contains(s, "(17) File exists"):
			kind = ErrExists
		}
		e := &Error{Command: strings.Join(argv, " "), Stderr: errb.String(), Err: kind}
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			e.ExitCode = ee.ExitCode()
		}
		return nil, e
	}
	return out.Bytes(), nil
}

// toolErrors is a tool's stderr without the client library's own warnings
// (an admin socket another client of the same name holds prints "(17) File
// exists", which is no answer to the command).
func toolErrors(stderr string) string {
	var keep []string
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "AdminSocket") || strings.Contains(line, "asok(") {
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "\n")
}

func nsArgs(namespace string) []string {
	if namespace == "" {
		return nil
	}
	return []string{"--namespace", namespace}
}

// Image reads an RBD image (rbd info) and its pool's ID (PoolID: ceph osd
// pool ls detail, or Tools.Cache).
func (t Tools) Image(ctx context.Context, pool, namespace, name string) (*adopt.Image, error) {
	out, err := t.run(ctx, "rbd", append(append([]string{"info", "--format", "json", "--pool", pool}, nsArgs(namespace)...), name)...)
	if err != nil {
		return nil, err
	}
	var info struct {
		Name     string   `json:"name"`
		ID       string   `json:"id"`
		Format   int      `json:"format"`
		Features []string `json:"features"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, fmt.Errorf("rbd info %s/%s: %w", pool, name, err)
	}
	id, err := t.PoolID(ctx, pool)
	if err != nil {
		return nil, err
	}
	return &adopt.Image{Pool: pool, PoolID: id, Namespace: namespace, Name: info.Name, ID: info.ID, Format: info.Format, Features: info.Features}, nil
}

// PoolID is a pool's ID (from Tools.Cache where it has it).
func (t Tools) PoolID(ctx context.Context, pool string) (int64, error) {
	return through(t.Cache, func(c *Cache) map[string]cachedAt[int64] { return c.pools }, pool, func() (int64, error) { return t.readPoolID(ctx, pool) })
}

func (t Tools) readPoolID(ctx context.Context, pool string) (int64, error) {
	out, err := t.run(ctx, "ceph", "osd", "pool", "ls", "detail", "--format", "json")
	if err != nil {
		return 0, err
	}
	var pools []struct {
		ID   int64  `json:"pool_id"`
		Name string `json:"pool_name"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &pools); err != nil {
		return 0, fmt.Errorf("ceph osd pool ls detail: %w", err)
	}
	for _, p := range pools {
		if p.Name == pool {
			return p.ID, nil
		}
	}
	return 0, &Error{Command: "ceph osd pool ls detail", Stderr: "no pool " + pool, Err: ErrNotFound}
}

// FSID is the fsid of the Ceph cluster at monitors (ceph fsid, connected
// to those monitors as Ceph CSI joins them; within 15 seconds, so that
// monitors of no reachable cluster are an error, not a wait).
func (t Tools) FSID(ctx context.Context, monitors []string) (string, error) {
	if len(monitors) == 0 || slices.Contains(monitors, "") {
		return "", fmt.Errorf("ceph fsid: want monitor addresses, got %q", monitors)
	}
	out, err := t.run(ctx, "ceph", "--mon-host", strings.Join(monitors, ","), "--connect-timeout", "15", "fsid", "--format", "json")
	if err != nil {
		return "", err
	}
	var v struct {
		FSID string `json:"fsid"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &v); err != nil || v.FSID == "" {
		return "", fmt.Errorf("ceph fsid: want {\"fsid\": ...}, got %q", bytes.TrimSpace(out))
	}
	return v.FSID, nil
}

// fsEntry is a file system as ceph fs ls lists it.
type fsEntry struct {
	Name         string `json:"name"`
	MetadataPool string `json:"metadata_pool"`
}

// fileSystems are the cluster's file systems (from Tools.Cache where it
// has them).
func (t Tools) fileSystems(ctx context.Context) ([]fsEntry, error) {
	return through(t.Cache, func(c *Cache) map[string]cachedAt[[]fsEntry] { return c.fss }, "", func() ([]fsEntry, error) {
		out, err := t.run(ctx, "ceph", "fs", "ls", "--format", "json")
		if err != nil {
			return nil, err
		}
		var list []fsEntry
		if err := json.Unmarshal(bytes.TrimSpace(out), &list); err != nil {
			return nil, fmt.Errorf("ceph fs ls: %w", err)
		}
		return list, nil
	})
}

// fsID is a file system's ID (from Tools.Cache where it has it).
func (t Tools) fsID(ctx context.Context, fs string) (int64, error) {
	return through(t.Cache, func(c *Cache) map[string]cachedAt[int64] { return c.fsIDs }, fs, func() (int64, error) {
		out, err := t.run(ctx, "ceph", "fs", "get", fs, "--format", "json")
		if err != nil {
			return 0, err
		}
		var got struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(bytes.TrimSpace(out), &got); err != nil {
			return 0, fmt.Errorf("ceph fs get %s: %w", fs, err)
		}
		return got.ID, nil
	})
}

// Subvolume reads a CephFS subvolume (ceph fs subvolume info) and its file
// system's ID and metadata pool (ceph fs ls, ceph fs get: from Tools.Cache
// where it has them); fs "" means the cluster's only file system. Ceph's
// volumes module records a legacy subvolume's metadata (under
// /volumes/_legacy) the first time it is asked, as it does for Ceph CSI's
// first call. A path it does not serve gives an error matching
// ErrNotSubvolume.
func (t Tools) Subvolume(ctx context.Context, fs, group, name string) (*adopt.Subvolume, error) {
	list, err := t.fileSystems(ctx)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(list, func(f fsEntry) bool { return f.Name == fs })
	switch {
	case fs == "" && len(list) == 1:
		i = 0
	case fs == "":
		return nil, &Error{Command: "ceph fs ls", Stderr: fmt.Sprintf("%d file systems, and the volume names none (mount option mds_namespace or fs)", len(list)), Err: ErrNotSubvolume}
	case i < 0:
		return nil, &Error{Command: "ceph fs ls", Stderr: "no file system " + fs, Err: ErrNotFound}
	}
	fs = list[i].Name
	fscid, err := t.fsID(ctx, fs)
	if err != nil {
		return nil, err
	}
	out, err := t.run(ctx, "ceph", "fs", "subvolume", "info", fs, name, "--group_name", group, "--format", "json")
	if err != nil {
		// ENOENT, ENOTDIR, ENODATA (a directory without an explicit layout).
		if te := (*Error)(nil); errors.As(err, &te) && slices.Contains([]int{2, 20, 61}, te.ExitCode) {
			te.Err = fmt.Errorf("%w (errno %d)", ErrNotSubvolume, te.ExitCode)
		}
		return nil, err
	}
	var info struct {
		Path     string   `json:"path"`
		Features []string `json:"features"`
		Type     string   `json:"type"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &info); err != nil {
		return nil, fmt.Errorf("ceph fs subvolume info %s %s %s: %w", fs, group, name, err)
	}
	return &adopt.Subvolume{FS: fs, FSCID: fscid, MetadataPool: list[i].MetadataPool, Group: group, Name: name, Path: info.Path, Features: info.Features}, nil
}

func radosArgs(pool, namespace string, args ...string) []string {
	return append(append([]string{"--pool", pool}, nsArgs(namespace)...), args...)
}

// Omap reads an object's omap keys and values; found is false when the
// object does not exist.
func (t Tools) Omap(ctx context.Context, pool, namespace, object string) (map[string]string, bool, error) {
	out, err := t.run(ctx, "rados", radosArgs(pool, namespace, "listomapvals", object)...)
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	vals, err := parseOmapVals(out)
	if err != nil {
		return nil, true, fmt.Errorf("rados listomapvals %s: %w", object, err)
	}
	return vals, true, nil
}

// parseOmapVals reads rados listomapvals' output: per key, the key on a
// line, "value (N bytes) :", a hex dump of the value and its end offset,
// and an empty line.
func parseOmapVals(out []byte) (map[string]string, error) {
	vals := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		key := sc.Text()
		if key == "" {
			continue
		}
		if !sc.Scan() {
			return nil, fmt.Errorf("key %q without a value", key)
		}
		var n int
		if _, err := fmt.Sscanf(sc.Text(), "value (%d bytes) :", &n); err != nil {
			return nil, fmt.Errorf("key %q: %q is not a value header", key, sc.Text())
		}
		var val []byte
		for len(val) < n && sc.Scan() {
			line := sc.Text()
			if len(line) < 10 {
				return nil, fmt.Errorf("key %q: short hex dump line %q", key, line)
			}
			hexPart := line[10:]
			if i := strings.IndexByte(hexPart, '|'); i >= 0 {
				hexPart = hexPart[:i]
			}
			for _, tok := range strings.Fields(hexPart) {
				b, err := hex.DecodeString(tok)
				if err != nil || len(b) != 1 {
					return nil, fmt.Errorf("key %q: %q is not a hex byte", key, tok)
				}
				val = append(val, b[0])
			}
		}
		if len(val) != n {
			return nil, fmt.Errorf("key %q: %d bytes read, %d announced", key, len(val), n)
		}
		if n > 0 {
			sc.Scan() // the end offset
		}
		vals[key] = string(val)
	}
	return vals, sc.Err()
}

// Write carries out one journal op with rados; a "create" of an object
// that exists fails with ErrExists, a removal of what is not there is not
// an error.
func (t Tools) Write(ctx context.Context, pool, namespace string, op adopt.Op) error {
	_, err := t.run(ctx, "rados", radosArgs(pool, namespace, op.Args()...)...)
	if (op.Verb == "rm" || op.Verb == "rmomapkey") && errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// Script is the shell command of an op, for review.
func (t Tools) Script(pool, namespace string, op adopt.Op) string {
	argv := t.Command("rados", radosArgs(pool, namespace, op.Args()...)...)
	for i, a := range argv {
		argv[i] = shell.Quote(a)
	}
	return strings.Join(argv, " ")
}

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
	"strings"

	"github.com/csimigrate/csimigrate/adopt"
)

// Errors the tools report, for errors.Is.
var (
	// ErrNotFound: the image, pool or object does not exist.
	ErrNotFound = errors.New("not found in Ceph")
	// ErrExists: an exclusive create found the object there.
	ErrExists = errors.New("already exists in Ceph")
)

// Tools runs Ceph's tools. The zero value runs them from PATH with their
// default configuration.
type Tools struct {
	// Prefix is prepended to every command (a program and its arguments).
	Prefix []string
	// Conf, ID and Keyring are passed as --conf, --id and --keyring when
	// set.
	Conf, ID, Keyring string
}

// Error is a tool that failed: the command (without secrets: none are in
// arguments) and what it printed on stderr.
type Error struct {
	Command string
	Stderr  string
	Err     error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %v: %s", e.Command, e.Err, strings.TrimSpace(e.Stderr))
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
		switch s := errb.String(); {
		case strings.Contains(s, "(2) No such file or directory"):
			kind = ErrNotFound
		case strings.Contains(s, "(17) File exists"):
			kind = ErrExists
		}
		return nil, &Error{Command: strings.Join(argv, " "), Stderr: errb.String(), Err: kind}
	}
	return out.Bytes(), nil
}

func nsArgs(namespace string) []string {
	if namespace == "" {
		return nil
	}
	return []string{"--namespace", namespace}
}

// Image reads an RBD image (rbd info) and its pool's ID (ceph osd pool ls
// detail).
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

// PoolID is a pool's ID.
func (t Tools) PoolID(ctx context.Context, pool string) (int64, error) {
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
		argv[i] = shellQuote(a)
	}
	return strings.Join(argv, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

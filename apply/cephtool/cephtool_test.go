package cephtool

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/csimigrate/csimigrate/internal/shell"
)

// The hex dump rados listomapvals prints (Ceph 16.2), with a value that
// spans two lines, one with a space, and an empty one.
func TestParseOmapVals(t *testing.T) {
	out := `csi.imagename
value (24 bytes) :
00000000  6b 75 62 65 72 6e 65 74  65 73 2d 64 79 6e 61 6d  |kubernetes-dynam|
00000010  69 63 2d 70 76 63 2d 31                           |ic-pvc-1|
00000018

csi.volname
value (4 bytes) :
00000000  70 76 20 31                                       |pv 1|
00000004

empty
value (0 bytes) :

`
	got, err := parseOmapVals([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"csi.imagename": "kubernetes-dynamic-pvc-1", "csi.volname": "pv 1", "empty": ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
	for _, bad := range []string{"k\n", "k\nvalue (x bytes) :\n", "k\nvalue (2 bytes) :\n00000000  6b zz  |k|\n", "k\nvalue (3 bytes) :\n00000000  6b  |k|\n"} {
		if _, err := parseOmapVals([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestCommandAndScript(t *testing.T) {
	tl := Tools{Prefix: []string{"kubectl", "exec", "-n", "rook-ceph", "deploy/rook-ceph-tools", "--"}, ID: "admin", Keyring: "/etc/ceph/keyring"}
	got := strings.Join(tl.Command("rados", "ls"), " ")
	if got != "kubectl exec -n rook-ceph deploy/rook-ceph-tools -- rados --id admin --keyring /etc/ceph/keyring ls" {
		t.Errorf("command %q", got)
	}
	if q := shell.Quote("pv 1's"); q != `'pv 1'"'"'s'` {
		t.Errorf("quote %s", q)
	}
}

// fakeCeph is a Tools whose tools are a shell script: it answers ceph fs ls
// and ceph fs get, and fails every other command as script says.
func fakeCeph(fail string) Tools {
	script := `case "$*" in
  *"fs ls"*) echo '[{"name":"myfs","metadata_pool":"cephfs.myfs.meta"},{"name":"other","metadata_pool":"o"}]' ;;
  *"fs get myfs"*) echo '{"id":3,"mdsmap":{}}' ;;
  *"subvolume info myfs good"*) echo '{"path":"/volumes/g/good","features":["snapshot-clone"],"type":"subvolume"}' ;;
  *) ` + fail + ` ;;
esac`
	return Tools{Prefix: []string{"sh", "-c", script, "fake"}}
}

// A subvolume Ceph's volumes module serves; one it does not (ENODATA, with
// a concurrent client's admin-socket warning that says "(17) File exists",
// which is no answer to the command); an unnamed file system among two.
func TestSubvolume(t *testing.T) {
	ctx := t.Context()
	sv, err := fakeCeph("exit 1").Subvolume(ctx, "myfs", "g", "good")
	if err != nil {
		t.Fatal(err)
	}
	if sv.FS != "myfs" || sv.FSCID != 3 || sv.MetadataPool != "cephfs.myfs.meta" || sv.Path != "/volumes/g/good" || !sv.CanClone() {
		t.Errorf("subvolume %+v", sv)
	}
	asok := `echo "2026-11-25T12:42:17.002+0000 7f06 -1 asok(0x7f06d4000ba0) AdminSocketConfigObs::init: failed: AdminSocket::bind_and_listen: failed to bind the UNIX domain socket to '/run/client.admin.asok': (17) File exists" >&2; echo "Error ENODATA: error in getxattr" >&2; exit 61`
	_, err = fakeCeph(asok).Subvolume(ctx, "myfs", "g", "byhand")
	var te *Error
	if !errors.Is(err, ErrNotSubvolume) || errors.Is(err, ErrExists) || !errors.As(err, &te) || te.Answer() != "Error ENODATA: error in getxattr" || te.ExitCode != 61 {
		t.Errorf("a directory without a layout: %v (answer %q)", err, te.Answer())
	}
	if _, err := fakeCeph(`echo "Error ETIMEDOUT: connection timed out" >&2; exit 110`).Subvolume(ctx, "myfs", "g", "x"); err == nil || errors.Is(err, ErrNotSubvolume) {
		t.Errorf("a failed connection: %v, want an error that is not ErrNotSubvolume", err)
	}
	if _, err := fakeCeph("exit 1").Subvolume(ctx, "", "g", "good"); !errors.Is(err, ErrNotSubvolume) || !strings.Contains(err.Error(), "2 file systems") {
		t.Errorf("no file system named among two: %v", err)
	}
}

// With a Cache, what a file system keeps (the list, its ID) and a pool's
// ID are read once for many volumes; without, for each. A failed read is
// not kept, and an answer older than the TTL is read again.
func TestCacheReadsOnce(t *testing.T) {
	ctx := t.Context()
	calls := t.TempDir() + "/calls"
	script := `echo "$*" >> ` + calls + `
case "$*" in
  *"fs ls"*) echo '[{"name":"myfs","metadata_pool":"cephfs.myfs.meta"}]' ;;
  *"fs get myfs"*) echo '{"id":3}' ;;
  *"subvolume info"*) echo '{"path":"/volumes/g/x","features":[],"type":"subvolume"}' ;;
  *"pool ls detail"*) [ -e ` + calls + `.fail ] && exit 5; echo '[{"pool_id":7,"pool_name":"rbd"}]' ;;
  *) exit 1 ;;
esac`
	count := func(what string) int {
		b, _ := os.ReadFile(calls)
		return strings.Count(string(b), what)
	}
	for _, tc := range []struct {
		cache      *Cache
		fsls, pool int
	}{{nil, 3, 3}, {NewCache(time.Hour), 1, 1}} {
		os.Remove(calls)
		tl := Tools{Prefix: []string{"sh", "-c", script, "fake"}, Cache: tc.cache}
		for range 3 {
			if sv, err := tl.Subvolume(ctx, "", "g", "x"); err != nil || sv.FSCID != 3 || sv.MetadataPool != "cephfs.myfs.meta" {
				t.Fatalf("cache %v: %+v %v", tc.cache != nil, sv, err)
			}
			if id, err := tl.PoolID(ctx, "rbd"); err != nil || id != 7 {
				t.Fatalf("cache %v: pool ID %d %v", tc.cache != nil, id, err)
			}
		}
		if n, m, g := count("fs ls"), count("pool ls"), count("fs get"); n != tc.fsls || m != tc.pool || g != tc.fsls {
			t.Errorf("cache %v: fs ls %d times, fs get %d, pool ls %d; want %d, %d, %d", tc.cache != nil, n, g, m, tc.fsls, tc.fsls, tc.pool)
		}
		if count("subvolume info") != 3 {
			t.Errorf("cache %v: subvolume info %d times, want 3 (never cached)", tc.cache != nil, count("subvolume info"))
		}
	}
	// A failed read is not kept; an expired answer is read again.
	os.Remove(calls)
	os.WriteFile(calls+".fail", nil, 0o644)
	tl := Tools{Prefix: []string{"sh", "-c", script, "fake"}, Cache: NewCache(time.Hour)}
	if _, err := tl.PoolID(ctx, "rbd"); err == nil {
		t.Fatal("a failing read gave no error")
	}
	os.Remove(calls + ".fail")
	if id, err := tl.PoolID(ctx, "rbd"); err != nil || id != 7 {
		t.Errorf("after a failed read: %d %v", id, err)
	}
	expiring := Tools{Prefix: []string{"sh", "-c", script, "fake"}, Cache: NewCache(0)}
	before := count("pool ls")
	for range 2 {
		if _, err := expiring.PoolID(ctx, "rbd"); err != nil {
			t.Fatal(err)
		}
	}
	if n := count("pool ls") - before; n != 2 {
		t.Errorf("with TTL 0: %d reads, want 2", n)
	}
}

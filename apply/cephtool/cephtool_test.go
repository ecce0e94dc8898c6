package cephtool

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
	if q := shellQuote("pv 1's"); q != `'pv 1'"'"'s'` {
		t.Errorf("quote %s", q)
	}
}

package cephtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// adopterCaps are the caps of the Ceph user docs/prerequisites.md gives
// rewrite -apply -adopt of RBD volumes: TestCephRBDAdoptUndo adopts and
// undoes as a user with exactly these (adopterUser), and
// TestCephAdopterCapsDocumented checks the page gives them.
var adopterCaps = []string{"mon", "profile rbd", "osd", "profile rbd", "mgr", "allow rw"}

// adopterCommand is the command line that creates the user, as the page
// gives it.
func adopterCommand() string {
	var b strings.Builder
	b.WriteString("ceph auth get-or-create client.csimigrate")
	for i := 0; i+1 < len(adopterCaps); i += 2 {
		b.WriteString(" " + adopterCaps[i] + " '" + adopterCaps[i+1] + "'")
	}
	return b.String()
}

// adopterUser creates client.csimigrate with adopterCaps on the test cluster
// and returns the command's flags that reach Ceph as it.
func adopterUser(t testing.TB, c *Cluster) []string {
	t.Helper()
	ctx := callCtx(t)
	out, err := c.Ceph(ctx, append([]string{"auth", "get-or-create", "client.csimigrate"}, adopterCaps...)...)
	if err != nil {
		t.Fatal(err)
	}
	keyring := filepath.Join(t.TempDir(), "ceph.client.csimigrate.keyring")
	if err := os.WriteFile(keyring, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"-ceph-id", "csimigrate", "-ceph-keyring", keyring}
}

// docs/prerequisites.md gives the Ceph user for -adopt with exactly the caps
// the adoption test runs with.
func TestCephAdopterCapsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "prerequisites.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := adopterCommand(); !strings.Contains(string(b), want+"\n") {
		t.Errorf("docs/prerequisites.md does not give the adoption's Ceph user as the tests create it:\n%s", want)
	}
}

package rewritecmd

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csimigrate/csimigrate/apply/cephtool"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/rewrite"
)

// The review scripts as bash reads them: the rewrite's and the undo's of the
// embedded sample, and the adoption's journal functions, parse (bash -n)
// and pass shellcheck (Debian's, which scripts/setup-packages installs),
// and let through exactly the finalizers the engine knows.
func TestReviewScriptsLint(t *testing.T) {
	for _, tool := range []string{"bash", "shellcheck"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to check the review script (scripts/setup-packages installs shellcheck): %v", tool, err)
		}
	}
	var journal bytes.Buffer
	if err := writeScriptJournal(&journal, cephtool.Tools{Conf: "/etc/ceph/ceph.conf", ID: "csimigrate"}); err != nil {
		t.Fatal(err)
	}
	scripts := map[string]string{"journal": "#!/usr/bin/env bash\n" + journal.String()}
	for name, args := range map[string][]string{"rewrite": {"-sample", "-o", "script"}, "undo": {"-sample", "-undo", "-o", "script"}} {
		var stdout, stderr bytes.Buffer
		code := Run(args, nil, &stdout, &stderr)
		out := stdout.String()
		if code != cli.ExitOK && code != cli.ExitBlocked || !strings.HasPrefix(out, "#!/usr/bin/env bash") {
			t.Fatalf("rewrite %v: exit %d\n%s", args, code, stderr.String())
		}
		scripts[name] = out
	}
	for name, script := range scripts {
		path := filepath.Join(t.TempDir(), name+".sh")
		if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", name, err, out)
		}
		if out, err := exec.Command("shellcheck", "-s", "bash", path).CombinedOutput(); err != nil {
			t.Errorf("shellcheck %s: %v\n%s", name, err, out)
		}
	}
	for _, f := range append([]string{rewrite.PVProtection}, rewrite.DeletionProtection...) {
		if !strings.Contains(scripts["rewrite"], f) {
			t.Errorf("the rewrite script does not let finalizer %s through", f)
		}
	}
}

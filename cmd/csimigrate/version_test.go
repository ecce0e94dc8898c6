package main

import (
	"runtime"
	"strings"
	"testing"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
)

// version prints the build's version, commit and Go version; a release
// build's -X values take the place of the build info's.
func TestVersion(t *testing.T) {
	out, _, code := runCmd(t, "", "version")
	if code != cli.ExitOK || !strings.HasPrefix(out, "csimigrate ") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("exit %d: %q", code, out)
	}
	version, commit = "v1.2.3", "0123abc"
	t.Cleanup(func() { version, commit = "", "" })
	if out, _, _ := runCmd(t, "", "version"); !strings.HasPrefix(out, "csimigrate v1.2.3 (commit 0123abc,") {
		t.Errorf("release build: %q", out)
	}
	if _, _, code := runCmd(t, "", "version", "extra"); code != cli.ExitUsage {
		t.Errorf("an argument: exit %d", code)
	}
}

package main

import (
	"fmt"
	"io"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
)

// version and commit, when a release build sets them (-ldflags "-X
// main.version=... -X main.commit=..."), are the binary's version and
// commit in place of those of its build info.
var version, commit string

func runVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "csimigrate version: unexpected arguments %q\n", args)
		return cli.ExitUsage
	}
	b := cli.ReadBuildInfo(version, commit)
	fmt.Fprintf(stdout, "csimigrate %s (commit %s, modified %s, %s)\n", b.Version, b.Commit, b.Modified, b.GoVersion)
	return cli.ExitOK
}

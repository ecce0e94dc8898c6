package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
)

// buildInfo is what a binary says of itself: its module version, the
// commit it was built from and the Go version, from the build info Go
// records.
type buildInfo struct {
	Version, Commit, Modified, GoVersion string
}

// version and commit, when a release build sets them (-ldflags "-X
// main.version=... -X main.commit=..."), are the binary's version and
// commit in place of those of its build info.
var version, commit string

// readBuildInfo reads the running binary's build info; what Go did not
// record is "unknown".
func readBuildInfo() (b buildInfo) {
	b = buildInfo{Version: "unknown", Commit: "unknown", Modified: "unknown", GoVersion: "unknown"}
	defer func() {
		if version != "" {
			b.Version = version
		}
		if commit != "" {
			b.Commit = commit
		}
	}()
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.GoVersion = info.GoVersion
	if v := info.Main.Version; v != "" {
		b.Version = v
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.modified":
			b.Modified = s.Value
		}
	}
	return b
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "csimigrate version: unexpected arguments %q\n", args)
		return exitUsage
	}
	b := readBuildInfo()
	fmt.Fprintf(stdout, "csimigrate %s (commit %s, modified %s, %s)\n", b.Version, b.Commit, b.Modified, b.GoVersion)
	return exitOK
}

// registerBuildInfo logs the controller's build and exports it as the
// metric csimigrate_build_info (always 1, the build in its labels).
func registerBuildInfo(reg prometheus.Registerer, logger klog.Logger) error {
	b := readBuildInfo()
	logger.Info("csimigrate controller", "version", b.Version, "commit", b.Commit, "modified", b.Modified, "goVersion", b.GoVersion)
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "csimigrate_build_info", Help: "The csimigrate build: version, commit and Go version (always 1)."},
		[]string{"version", "commit", "goversion"})
	if err := reg.Register(g); err != nil {
		return err
	}
	g.WithLabelValues(b.Version, b.Commit, b.GoVersion).Set(1)
	return nil
}

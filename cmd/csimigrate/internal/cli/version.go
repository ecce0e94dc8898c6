package cli

import "runtime/debug"

// BuildInfo is what a binary says of itself: its module version, the
// commit it was built from and the Go version, from the build info Go
// records.
type BuildInfo struct {
	Version, Commit, Modified, GoVersion string
}

// ReadBuildInfo reads the running binary's build info; what Go did not
// record is "unknown". version and commit, when a release build sets them
// (the command's main.version and main.commit, -ldflags "-X ..."), take
// the place of its build info's.
func ReadBuildInfo(version, commit string) (b BuildInfo) {
	b = BuildInfo{Version: "unknown", Commit: "unknown", Modified: "unknown", GoVersion: "unknown"}
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

// Command modproxy writes a file-based Go module proxy (GOPROXY=file://DIR)
// that serves modules of a git repository at a tagged version, as the public
// proxy would serve them once the tags are pushed: each module's .info,
// .mod and .zip (made with golang.org/x/mod/zip from the tag, so that its
// content and hash are those of the release) and its version list.
//
//	modproxy -repo DIR -out DIR -version vX.Y.Z PATH=SUBDIR ...
//
// Each PATH=SUBDIR names a module and its directory in the repository (""
// for the root); the repository must hold the tag of each at the version
// (vX.Y.Z for the root, SUBDIR/vX.Y.Z for the others).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func main() {
	repo := flag.String("repo", "", "the git repository holding the tags")
	out := flag.String("out", "", "the proxy's directory")
	version := flag.String("version", "", "the version every module is served at")
	flag.Parse()
	if *repo == "" || *out == "" || *version == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: modproxy -repo DIR -out DIR -version vX.Y.Z PATH=SUBDIR ...")
		os.Exit(2)
	}
	for _, arg := range flag.Args() {
		modPath, subdir, ok := strings.Cut(arg, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "modproxy: %q: want PATH=SUBDIR\n", arg)
			os.Exit(2)
		}
		if err := serve(*repo, *out, module.Version{Path: modPath, Version: *version}, subdir); err != nil {
			fmt.Fprintf(os.Stderr, "modproxy: %s@%s: %v\n", modPath, *version, err)
			os.Exit(1)
		}
	}
}

// serve writes m's files into the proxy at out, from its tag in repo.
func serve(repo, out string, m module.Version, subdir string) error {
	tag := m.Version
	if subdir != "" {
		tag = path.Join(subdir, m.Version)
	}
	escaped, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	dir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var z bytes.Buffer
	if err := zip.CreateFromVCS(&z, m, repo, tag, subdir); err != nil {
		return err
	}
	gomod, err := exec.Command("git", "-C", repo, "show", tag+":"+path.Join(subdir, "go.mod")).Output()
	if err != nil {
		return fmt.Errorf("reading go.mod at %s: %w", tag, err)
	}
	when, err := exec.Command("git", "-C", repo, "log", "-1", "--format=%cI", tag).Output()
	if err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(string(when)))
	if err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, t.UTC()})
	if err != nil {
		return err
	}
	for name, b := range map[string][]byte{m.Version + ".zip": z.Bytes(), m.Version + ".mod": gomod, m.Version + ".info": info, "list": []byte(m.Version + "\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

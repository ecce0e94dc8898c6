package apply_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testOnlyModules are modules that only tests of this checkout need: an
// importer of the writer must not get any of them in its module graph.
var testOnlyModules = []string{
	"google.golang.org/grpc",
	"github.com/container-storage-interface/spec",
	"k8s.io/kubelet",
	"github.com/csimigrate/csimigrate/nodetest",
	"github.com/csimigrate/csimigrate/cephtest",
	"github.com/csimigrate/csimigrate/vspheretest",
	"github.com/csimigrate/csimigrate/cmd/csimigrate",
}

// TestImportersModuleGraph is a program outside the checkout that imports
// the writer and the library, as an importer's module is: go mod tidy, then
// go mod graph. No module of this checkout requires a test module or a
// module only tests need (gRPC, the CSI spec, the kubelet's API), and no
// package the program builds comes from one. (The graph itself does hold
// gRPC, through k8s.io/component-base's own go.mod, which the library's
// featuregate needs: component-base's tracing requires it; no package of it
// is built, and go mod why -m says so.) The checkout's two modules are given
// by replace lines, so the graph is of the go.mod files here, as they would
// be tagged.
func TestImportersModuleGraph(t *testing.T) {
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return filepath.ToSlash(a)
	}
	dir := t.TempDir()
	gomod := "module example.com/importer\n\ngo 1.26.0\n\n" +
		"require (\n\tgithub.com/csimigrate/csimigrate v0.1.0\n\tgithub.com/csimigrate/csimigrate/apply v0.1.0\n)\n\n" +
		"replace (\n\tgithub.com/csimigrate/csimigrate v0.1.0 => " + abs("..") +
		"\n\tgithub.com/csimigrate/csimigrate/apply v0.1.0 => " + abs(".") + "\n)\n"
	main := `package main

import (
	"fmt"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/apply/vcenter"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/translate"
)

func main() {
	tr, err := translate.New()
	fmt.Println(tr != nil, err, apply.LeaseName, plan.New != nil, vcenter.ParseConfig != nil)
}
`
	for name, text := range map[string]string{"go.mod": gomod, "main.go": main} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gocmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	gocmd("mod", "tidy")
	graph := gocmd("mod", "graph")
	ours := "github.com/csimigrate/csimigrate"
	seen := map[string]bool{}
	for _, line := range strings.Split(graph, "\n") {
		from, to, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		fromPath, _, _ := strings.Cut(from, "@")
		toPath, _, _ := strings.Cut(to, "@")
		seen[toPath] = true
		if fromPath != ours && !strings.HasPrefix(fromPath, ours+"/") {
			continue
		}
		for _, m := range testOnlyModules {
			if toPath == m {
				t.Errorf("%s requires %s: every importer of it gets that module's requirements", fromPath, to)
			}
		}
	}
	if !seen["k8s.io/client-go"] || !seen[ours+"/apply"] {
		t.Fatalf("the graph lacks client-go or the writer: it is not the importer's\n%s", graph)
	}
	for _, pkg := range strings.Fields(gocmd("list", "-deps", ".")) {
		for _, m := range testOnlyModules {
			if pkg == m || strings.HasPrefix(pkg, m+"/") {
				t.Errorf("an importer of the writer builds %s", pkg)
			}
		}
	}
	t.Logf("%d modules in an importer's graph", len(seen))
}

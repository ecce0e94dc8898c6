package main

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
)

// engineDirs are the library's packages (the engine and what it is built
// on), relative to this package.
var engineDirs = []string{"adopt", "apply", "featuregate", "internal", "plan", "plugin", "plugins", "rewrite", "secrets", "translate", "volumeid"}

// The engine's texts (every string literal of its non-test sources) name
// none of the command's subcommands, flags or report headings: a library
// user's program shows them, and the command words its own pointers from
// the findings' data (commandRemedies, localizeFinding).
func TestEngineTextsNameNoCommand(t *testing.T) {
	var flags []string
	for _, c := range commands {
		fs := cli.NewFlagSet("x", "", io.Discard)
		c.options().Register(fs)
		fs.VisitAll(func(f *flag.Flag) { flags = append(flags, regexp.QuoteMeta(f.Name)) })
	}
	flagRE := regexp.MustCompile(`(^|[\s(\x60])-(` + strings.Join(flags, "|") + `)\b`)
	commandRE := regexp.MustCompile(`\bcsimigrate (plan|rewrite|translate|dump|controller|clusterid|version)\b`)
	headings := reportHeadings(t)
	if len(headings) < 5 {
		t.Fatalf("found %d report headings in the command's sources (%q): the test reads them from table{title: ...}", len(headings), headings)
	}
	files := 0
	for _, dir := range engineDirs {
		err := filepath.WalkDir(filepath.Join("..", "..", dir), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() == "testenv" {
				return filepath.SkipDir // apply/testenv: the tests' servers, started with their own flags
			}
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			files++
			for _, lit := range stringLiterals(t, path) {
				text := lit.text
				for _, tool := range []string{"kubectl ", "setfattr "} {
					if i := strings.Index(text, tool); i >= 0 {
						text = text[:i] // another tool's command line quoted, with its own flags
					}
				}
				if m := commandRE.FindString(text); m != "" {
					t.Errorf("%s: names the command (%q): %q", lit.pos, m, lit.text)
				}
				if m := flagRE.FindString(text); m != "" {
					t.Errorf("%s: names the command's flag %q: %q", lit.pos, strings.TrimSpace(m), lit.text)
				}
				for _, h := range headings {
					if strings.Contains(text, h) {
						t.Errorf("%s: names the report's heading %q: %q", lit.pos, h, lit.text)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 50 {
		t.Fatalf("read %d engine source files; the walk is broken", files)
	}
}

type literal struct {
	pos  token.Position
	text string
}

// stringLiterals are a Go file's string literals, unquoted.
func stringLiterals(t *testing.T, path string) []literal {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []literal
	ast.Inspect(f, func(n ast.Node) bool {
		if _, ok := n.(*ast.ImportSpec); ok {
			return false
		}
		if b, ok := n.(*ast.BasicLit); ok && b.Kind == token.STRING {
			if s, err := strconv.Unquote(b.Value); err == nil {
				out = append(out, literal{fset.Position(b.Pos()), s})
			}
		}
		return true
	})
	return out
}

// reportHeadings are the titles of the command's report tables
// (table{title: "\nSTORAGE CLASSES (...)"}: "STORAGE CLASSES"), read from
// its sources.
func reportHeadings(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	inner, err := filepath.Glob(filepath.Join("internal", "*", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, inner...)
	upper := regexp.MustCompile(`^[A-Z][A-Z ]*[A-Z]`)
	var out []string
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			kv, ok := n.(*ast.KeyValueExpr)
			if !ok {
				return true
			}
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "title" {
				if b, ok := kv.Value.(*ast.BasicLit); ok && b.Kind == token.STRING {
					if s, err := strconv.Unquote(b.Value); err == nil {
						if h := upper.FindString(strings.TrimSpace(s)); h != "" {
							out = append(out, h)
						}
					}
				}
			}
			return true
		})
	}
	return out
}

package csimigrate_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// userPages are the pages users read: they say what is. History, dates,
// test and benchmark names and commit ids belong in commit messages and in
// docs/testing.md and docs/performance.md.
var userPages = []string{"README.md", "docs/backends.md", "docs/command.md", "docs/controller.md", "docs/rewrite-apply.md", "docs/library.md", "docs/peers.md", "docs/flags.md", "docs/codes.md", "docs/prerequisites.md", "docs/upgrade.md", "docs/rescue.md"}

// What a user page must not carry, and why.
var notInUserPages = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b`), "a date"},
	{regexp.MustCompile("`(?:[a-z0-9]+\\.)?(?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_/.]*`"), "a test or benchmark name"},
	{regexp.MustCompile("`[0-9a-f]{7,40}`"), "a commit id"},
	{regexp.MustCompile(`(?i)\b(?:an earlier version|now fixed|before this change|in session [0-9]+)\b`), "history"},
}

func TestUserPagesSayWhatIs(t *testing.T) {
	for _, page := range userPages {
		b, err := os.ReadFile(filepath.FromSlash(page))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, rule := range notInUserPages {
				if m := rule.re.FindString(line); m != "" {
					t.Errorf("%s:%d: %s (%s): move it to docs/testing.md or docs/performance.md, or a commit message", page, i+1, rule.why, m)
				}
			}
		}
	}
}

// The README is a front door: what csimigrate is, the two commands, where
// to start and where to read on; the details live in docs/.
func TestREADMEIsShort(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(string(b))); n > 1200 {
		t.Errorf("README.md has %d words: keep it to 1,200, and move details to docs/", n)
	}
}

// printedCode is the declaration of a code the tool prints: a finding's
// (FindingX = "Code"), a refusal's (CodeX Code = "Code", also the
// controller's Event reason and metric label) or another Event reason of
// the controller's (ReasonX = "Reason").
var printedCode = regexp.MustCompile(`(?m)^\s*(Finding|Code|Reason)[A-Za-z0-9]* +(?:Code +)?= "([A-Za-z0-9]+)"`)

var kindOfCode = map[string]string{"Finding": "finding code", "Code": "refusal code", "Reason": "Event reason"}

// Every code the library, the engine, the command and the controller print
// (findings, refusals, Event reasons) has a row in a user page's table:
// what it means and what to do.
func TestPrintedCodesDocumented(t *testing.T) {
	var docs strings.Builder
	for _, page := range userPages {
		b, err := os.ReadFile(filepath.FromSlash(page))
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
	}
	n := map[string]int{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "tools") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range printedCode.FindAllStringSubmatch(string(b), -1) {
			n[m[1]]++
			if !regexp.MustCompile("(?m)^\\|[^\\n]*`" + m[2] + "`").MatchString(docs.String()) {
				t.Errorf("%s: %s %s has no row in a table of %v", path, kindOfCode[m[1]], m[2], userPages)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n["Finding"] < 30 || n["Code"] < 20 || n["Reason"] < 8 {
		t.Errorf("found %v codes in the source: the pattern no longer matches how they are declared", n)
	}
}

// The base's Deployment asks for the memory the sizing table's row marked
// "the base" gives.
func TestBaseFollowsTheSizingTable(t *testing.T) {
	doc, err := os.ReadFile(filepath.FromSlash("docs/performance.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| [^|]*\(the base\) \| ([0-9]+Mi) \| ([0-9]+Mi) \|$`).FindStringSubmatch(string(doc))
	if row == nil {
		t.Fatal(`docs/performance.md: no sizing row marked "(the base)" with a request and a limit`)
	}
	base, err := os.ReadFile(filepath.FromSlash("cmd/csimigrate/deploy/base/controller.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"requests: {cpu: 50m, memory: " + row[1] + "}", "limits: {memory: " + row[2] + "}"} {
		if !strings.Contains(string(base), want) {
			t.Errorf("cmd/csimigrate/deploy/base/controller.yaml lacks %q (the sizing table's base row: request %s, limit %s)", want, row[1], row[2])
		}
	}
}

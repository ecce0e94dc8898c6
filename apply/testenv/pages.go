package testenv

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// PageRan fails the test for each `kubectl csimigrate` command of the code
// blocks of page (a file) that ran lacks, and when the page has fewer than
// min of them (its form changed). section, when not "", is the part of the
// page from that heading ("## vSphere") to the next; skip, when not "",
// is a heading where the page is cut (what follows is another test's). A
// command is keyed as ran keys it: "csimigrate ARGS", without what follows
// a pipe, a redirection or a comment.
func PageRan(t testing.TB, page, section, skip string, ran map[string]bool, min int) {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if section != "" {
		var ok bool
		if _, text, ok = strings.Cut(text, "\n"+section); !ok {
			t.Fatalf("%s has no section %q", page, section)
		}
		text, _, _ = strings.Cut(text, "\n## ")
	}
	if skip != "" {
		text, _, _ = strings.Cut(text, "\n"+skip)
	}
	in, n := false, 0
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "```") {
			in = !in
			continue
		}
		cmd, ok := strings.CutPrefix(line, "kubectl ")
		if !in || !ok || !strings.HasPrefix(cmd, "csimigrate ") {
			continue
		}
		for _, sep := range []string{" |", " >", " #"} {
			cmd, _, _ = strings.Cut(cmd, sep)
		}
		n++
		if cmd = strings.TrimSpace(cmd); !ran[cmd] {
			t.Errorf("%s runs %q, which the test did not; it ran %q", page, cmd, slices.Sorted(maps.Keys(ran)))
		}
	}
	if n < min {
		t.Errorf("%s has %d kubectl csimigrate commands in code blocks, fewer than %d: its form changed", page, n, min)
	}
}

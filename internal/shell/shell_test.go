package shell

import (
	"os/exec"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// Every word, quoted, is read back by a real shell as exactly that word.
func TestQuoteRoundTripsThroughShell(t *testing.T) {
	var words []string
	rapid.Check(t, func(t *rapid.T) {
		words = append(words, rapid.StringOf(rapid.Rune().Filter(func(r rune) bool { return r != 0 })).Draw(t, "word"))
	})
	words = append(words, "", "'", `a'b"c`, "$HOME", "a b", "*", "~", "!x", "-n", "x;y", "\\", "a\nb")
	script := "for w in"
	for _, w := range words {
		script += " " + Quote(w)
	}
	script += `; do printf '%s\0' "$w"; done`
	out, err := exec.Command("sh", "-c", script).Output()
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for _, got := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if i >= len(words) || got != words[i] {
			t.Fatalf("word %d: the shell read %q, want %q", i, got, words[i])
		}
		i++
	}
	if i != len(words) {
		t.Fatalf("the shell read %d words, want %d", i, len(words))
	}
}

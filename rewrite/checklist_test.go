package rewrite

import (
	"slices"
	"testing"
)

// The checklist names each check once, in its order, and hands out a copy.
func TestChecklist(t *testing.T) {
	list := Checklist()
	names := map[string]bool{}
	for i, c := range list {
		if int(c) != i {
			t.Errorf("check %d is %d", i, c)
		}
		if n := c.String(); n == "" || names[n] || n[0] == 'C' {
			t.Errorf("check %d's name %q: empty, repeated or not one", i, n)
		}
		names[c.String()] = true
	}
	list[0] = CheckInUse
	if again := Checklist(); again[0] != CheckDriver || !slices.Contains(again, CheckInUse) {
		t.Errorf("Checklist gave the caller's change back: %v", again)
	}
	if s := Check(-1).String(); s != "Check(-1)" {
		t.Errorf("an unknown check is %q", s)
	}
}

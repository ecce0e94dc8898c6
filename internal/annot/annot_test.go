package annot_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/internal/annot"
)

// DecodeList reads back what EncodeList writes.
func TestEncodeList(t *testing.T) {
	item := rapid.OneOf(rapid.String(), rapid.SampledFrom([]string{"", ",", "[", "a,b", "10.0.0.1:6789"}))
	rapid.Check(t, func(t *rapid.T) {
		list := rapid.SliceOf(item).Draw(t, "list")
		enc := annot.EncodeList(list)
		back, err := annot.DecodeList(enc)
		if err != nil || (len(list) > 0 && !cmp.Equal(back, list)) || (len(list) == 0 && back != nil) {
			t.Fatalf("DecodeList(%q) = %q, %v; want %q", enc, back, err, list)
		}
	})
}

// SplitsTo holds exactly when splitting s at commas gives list back, for
// lists that EncodeList writes comma-joined (no element empty or with a
// comma); any other list is never the split of a string here.
func TestSplitsTo(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		list := rapid.SliceOfN(rapid.StringOfN(rapid.SampledFrom([]rune{'a', 'b', ',', '['}), 0, 3, -1), 0, 3).Draw(t, "list")
		s := rapid.StringOfN(rapid.SampledFrom([]rune{'a', 'b', ',', '['}), 0, 8, -1).Draw(t, "s")
		if rapid.Bool().Draw(t, "joined") {
			s = strings.Join(list, ",")
		}
		plain := len(list) > 0
		for _, e := range list {
			if e == "" || strings.Contains(e, ",") {
				plain = false
			}
		}
		want := plain && slices.Equal(strings.Split(s, ","), list)
		if got := annot.SplitsTo(s, list); got != want {
			t.Fatalf("SplitsTo(%q, %q) = %v, want %v", s, list, got, want)
		}
	})
}

package annot_test

import (
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

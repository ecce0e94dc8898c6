package plugins

import (
	"encoding/json"
	"testing"

	"pgregory.net/rapid"
)

// appendJSONList writes what encoding/json writes, for any strings
// (including invalid UTF-8, control and HTML characters, U+2028/U+2029).
func TestAppendJSONListMatchesEncodingJSON(t *testing.T) {
	chars := rapid.OneOf(rapid.String(), rapid.StringOf(rapid.SampledFrom([]rune{'"', '\\', '<', '>', '&', '\b', '\f', '\n', '\r', '\t', 0, 0x1f, 0x7f, '\u2028', '\u2029', 'a', ','})),
		rapid.Custom(func(t *rapid.T) string { return string(rapid.SliceOf(rapid.Byte()).Draw(t, "bytes")) }))
	rapid.Check(t, func(t *rapid.T) {
		list := rapid.SliceOf(chars).Draw(t, "list")
		want, err := json.Marshal(list)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONList(nil, list); string(got) != string(want) {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}

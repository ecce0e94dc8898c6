package cli

import (
	"testing"
)

// A positional argument is refused; a number first is taken for kubectl's
// "-v 4", and the refusal says how a verbosity is given.
func TestNoArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"4"}, `unexpected arguments ["4"]: give a verbosity as -v=4 (-v alone is -v=4)`},
		{[]string{"pv-1"}, `unexpected arguments ["pv-1"]`},
		{[]string{"99999"}, `unexpected arguments ["99999"]`},
	} {
		got := ""
		if err := NoArgs(tc.args); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("noArgs(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

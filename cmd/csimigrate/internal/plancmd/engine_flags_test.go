package plancmd

import (
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/output"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
)

// flagWord finds a command-line flag in a text: " -online", "(-live".
var flagWord = regexp.MustCompile(`(^|[\s(])-[a-z][a-z0-9-]+`)

// engineFlags are the flags an engine text names, other than those of a
// kubectl command line it quotes.
func engineFlags(s string) []string {
	var out []string
	for _, part := range regexp.MustCompile(`[;()]`).Split(s, -1) {
		if i := strings.Index(part, "kubectl "); i >= 0 {
			part = part[:i]
		}
		out = append(out, flagWord.FindAllString(part, -1)...)
	}
	return out
}

// strings walks every string of a JSON value.
func stringsOf(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case []any:
		for _, e := range x {
			stringsOf(e, f)
		}
	case map[string]any:
		for _, e := range x {
			stringsOf(e, f)
		}
	}
}

// The engine's report names no program's flags: its remedies are in its
// own words, with the action as data; the command words them with its
// flags. Checked on the sample and the test dumps, whose plans have
// refusals, missing claims and Secrets, in-use volumes and topology
// mismatches.
func TestEngineNamesNoFlags(t *testing.T) {
	inputs := [][]string{nil, {"../../testdata/dump.json"}, {"../../testdata/csinodes.yaml"}, {"../../testdata/rewrite-dump.yaml"}}
	actions := map[plugin.Action]bool{}
	for _, files := range inputs {
		o := &options{}
		o.Files, o.Sample = files, len(files) == 0
		o.NodeExpand = true
		o.k8sMinor = 30
		var err error
		if o.tr, err = o.Translator(); err != nil {
			t.Fatal(err)
		}
		pl := o.planner(io.Discard)
		for _, phase := range []plan.Phase{plan.PhaseOthers, plan.PhasePVs} {
			pl.SetPhase(phase)
			if err := o.ReadInput(nil, io.Discard, pl); err != nil {
				t.Fatal(err)
			}
		}
		report := pl.Finish()
		for _, f := range report.Hazards {
			actions[f.Action] = true
		}
		for _, v := range report.Volumes {
			for _, f := range v.Findings {
				actions[f.Action] = true
			}
		}
		b, err := json.Marshal(report)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		stringsOf(v, func(s string) {
			if flags := engineFlags(s); len(flags) > 0 {
				t.Errorf("%v: the engine's report names flags %q: %s", files, flags, s)
			}
		})
	}
	// The command words the actions it met with its flags.
	for a := range actions {
		if a == "" {
			continue
		}
		if got := output.CommandRemedy(a, "Secrets", "ENGINE"); len(engineFlags(got)) == 0 && !strings.Contains(got, "csimigrate") {
			t.Errorf("action %s: the command's words %q name none of its flags or commands", a, got)
		}
	}
}

package main

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
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
	inputs := [][]string{nil, {"testdata/dump.json"}, {"testdata/csinodes.yaml"}, {"testdata/rewrite-dump.yaml"}}
	actions := map[plugin.Action]bool{}
	for _, files := range inputs {
		o := &planOptions{}
		o.files, o.sample = files, len(files) == 0
		o.nodeExpand = true
		o.k8sMinor = 30
		var err error
		if o.tr, err = o.translator(); err != nil {
			t.Fatal(err)
		}
		pl := o.planner(io.Discard)
		for _, phase := range []plan.Phase{plan.PhaseOthers, plan.PhasePVs} {
			pl.SetPhase(phase)
			if err := o.read(nil, io.Discard, pl); err != nil {
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
		if got := commandRemedy(a, "Secrets", "ENGINE"); len(engineFlags(got)) == 0 && !strings.Contains(got, "csimigrate") {
			t.Errorf("action %s: the command's words %q name none of its flags or commands", a, got)
		}
	}
}

// The writer's errors in the command's words, built from the data of the
// object, the refusal or the state each is: a refusal's remedy
// by its action, a run in progress with the command that finishes it;
// joined errors one per line; other errors as they are.
func TestCommandError(t *testing.T) {
	ref := &rewrite.Refusal{Code: rewrite.CodeSecretMissing, Reason: "Secret ns/ceph is missing", Remedy: "create it",
		Action: plugin.ActionCreateSecret, ActsOn: "Secret ns/ceph"}
	inProgress := func(undo, adoptCSI bool) error {
		return &apply.ObjectError{Object: rewrite.PVRef("a"), Err: &apply.InProgressError{ConfigMap: "kube-system/s", Object: rewrite.PVRef("a"), Run: directionOf(undo, adoptCSI)}}
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&apply.ObjectError{Object: rewrite.PVRef("a"), Err: ref}, "pv/a: Secret ns/ceph is missing; create it (csimigrate plan lists it under SECRETS)"},
		{inProgress(false, false), "pv/a: ConfigMap kube-system/s holds a rewrite of pv/a in progress; finish it first (csimigrate rewrite -apply), nothing is done with it here"},
		{inProgress(true, false), "pv/a: ConfigMap kube-system/s holds an undo of pv/a in progress; finish it first (csimigrate rewrite -apply -undo), nothing is done with it here"},
		{inProgress(false, true), "pv/a: ConfigMap kube-system/s holds an adoption of pv/a in progress; finish it first (csimigrate rewrite -apply -adopt -adopt-csi), nothing is done with it here"},
		{inProgress(true, true), "pv/a: ConfigMap kube-system/s holds an undo of an adoption of pv/a in progress; finish it first (csimigrate rewrite -apply -undo -adopt -adopt-csi), nothing is done with it here"},
		{errors.Join(errors.New("one"), &apply.ObjectError{Object: rewrite.PVRef("b"), Err: ref}), "one\npv/b: Secret ns/ceph is missing; create it (csimigrate plan lists it under SECRETS)"},
		{ref, "Secret ns/ceph is missing; create it (csimigrate plan lists it under SECRETS)"},
		{&apply.ObjectError{Object: rewrite.ClassRef("c"), Err: errors.New("the API server said no")}, "storageclass/c: the API server said no"},
		{errors.New("the API server said no"), "the API server said no"},
	} {
		if got := commandError(tc.err); got != tc.want {
			t.Errorf("commandError(%q):\n got %q\nwant %q", tc.err, got, tc.want)
		}
	}
}

// secretsDump finds a command line that prints Secrets with their values:
// kubectl get naming secrets among its kinds.
var secretsDump = regexp.MustCompile(`kubectl get [a-z,./]*secrets?\b`)

// No remedy, the command's or the engine's, tells an admin to run a command
// that prints Secret values: the command's words point to csimigrate dump,
// which leaves them out.
func TestRemediesWriteNoSecretValues(t *testing.T) {
	for action, word := range commandRemedies {
		for _, object := range []string{"", "PersistentVolumeClaims", "Secrets", "CSIDrivers", "CephCSIConfig"} {
			if got := word(object, "the engine's words"); secretsDump.MatchString(got) {
				t.Errorf("%s (%s): %q prints Secret values", action, object, got)
			}
		}
	}
	if got := commandRemedies[plugin.ActionGiveInput]("Secrets", ""); !strings.Contains(got, "csimigrate dump") {
		t.Errorf("the remedy for missing Secrets: %q, want it to name csimigrate dump", got)
	}
	if !secretsDump.MatchString("kubectl get pv,pvc,sc,pods,secrets -A -o yaml") {
		t.Fatal("the pattern misses the command line it is for")
	}
	// The engine's remedies, as its source words them.
	for _, dir := range []string{"../../plan", "../../rewrite", "../../apply"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if m := secretsDump.FindString(string(b)); m != "" {
				t.Errorf("%s: %q prints Secret values", f, m)
			}
		}
	}
}

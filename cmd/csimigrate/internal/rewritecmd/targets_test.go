package rewritecmd

import (
	"strings"
	"testing"
)

// A target names a PV by its name or its claim (pvc/NAMESPACE/NAME), the
// PVs of a namespace's claims (namespace/NAME), or a class; anything else
// is refused, saying what is accepted.
func TestTargets(t *testing.T) {
	type pv struct{ name, claim string }
	pvs := []pv{{"a", "app/db"}, {"b", "app/logs"}, {"c", "other/db"}, {"d", ""}}
	for _, tc := range []struct {
		given   string
		pvs     string // the PVs it names, joined
		classes string // of classes "rbd" and "fs"
		err     bool
	}{
		{given: "a", pvs: "a"},
		{given: "pv/d", pvs: "d"},
		{given: "pvc/app/db", pvs: "a"},
		{given: "persistentvolumeclaim/other/db", pvs: "c"},
		{given: "namespace/app", pvs: "a,b"},
		{given: "ns/other", pvs: "c"},
		{given: "storageclass/rbd", classes: "rbd"},
		{given: "sc/fs", classes: "fs"},
		{given: "pvc/app", err: true},
		{given: "pvc/app/db/x", err: true},
		{given: "namespace/Bad_NS", err: true},
		{given: "secret/s", err: true},
		{given: "a/b/c", err: true},
	} {
		tg, err := parseTarget(tc.given)
		if tc.err {
			if err == nil || !strings.Contains(err.Error(), targetUsage) || !strings.Contains(err.Error(), tc.given) {
				t.Errorf("%s: %v, want an error naming it and what is accepted", tc.given, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.given, err)
			continue
		}
		var named, classes []string
		for _, p := range pvs {
			if tg.selectsPV(p.name, p.claim) {
				named = append(named, p.name)
			}
		}
		for _, c := range []string{"rbd", "fs"} {
			if tg.selectsClass(c) {
				classes = append(classes, c)
			}
		}
		if got := strings.Join(named, ","); got != tc.pvs {
			t.Errorf("%s names PVs %q, want %q", tc.given, got, tc.pvs)
		}
		if got := strings.Join(classes, ","); got != tc.classes {
			t.Errorf("%s names classes %q, want %q", tc.given, got, tc.classes)
		}
	}
}

package output

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
)

// The writer's errors in the command's words, built from the data of the
// object, the refusal or the state each is: a refusal's remedy
// by its action, a run in progress with the command that finishes it;
// joined errors one per line; other errors as they are.
func TestCommandError(t *testing.T) {
	ref := &rewrite.Refusal{Code: rewrite.CodeSecretMissing, Reason: "Secret ns/ceph is missing", Remedy: "create it",
		Action: plugin.ActionCreateSecret, ActsOn: "Secret ns/ceph"}
	inProgress := func(undo, adoptCSI bool) error {
		return &apply.ObjectError{Object: rewrite.PVRef("a"), Err: &apply.InProgressError{ConfigMap: "kube-system/s", Object: rewrite.PVRef("a"), Run: DirectionOf(undo, adoptCSI)}}
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
		if got := CommandError(tc.err); got != tc.want {
			t.Errorf("CommandError(%q):\n got %q\nwant %q", tc.err, got, tc.want)
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
	for _, dir := range []string{"../../../../plan", "../../../../rewrite", "../../../../apply"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("the engine's sources in %s: %d files, %v", dir, len(files), err)
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

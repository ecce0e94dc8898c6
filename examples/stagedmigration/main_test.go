package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	var b bytes.Buffer
	if code := run(&b); code != 0 {
		t.Fatalf("exit %d:\n%s", code, b.String())
	}
	out := b.String()
	// The planner's order: wait while hibernated, requeue for each old
	// kubelet, delete only the legacy classes, annotate, re-render, finish.
	order := []string{"Wait:", "Requeue:", "Requeue:", "DeleteStorageClasses:", "deleted StorageClasses [default thin]", "Annotate: every kubelet",
		"RerenderControlPlane:", "Annotate: migration complete", "Done:"}
	rest := out
	for _, want := range order {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("missing %q in order:\n%s", want, out)
		}
		rest = rest[i+len(want):]
	}
	if strings.Contains(out, "fast") {
		t.Errorf("the CSI StorageClass was touched:\n%s", out)
	}
}

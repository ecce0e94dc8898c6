package plan

import (
	"testing"

	"github.com/csimigrate/csimigrate/rewrite"
)

// The plan has a function for every check of the checklist.
func TestPlanRunsEveryCheck(t *testing.T) {
	for _, c := range rewrite.Checklist() {
		if planChecks[c] == nil {
			t.Errorf("the plan has no function for check %s", c)
		}
	}
	if len(planChecks) != len(rewrite.Checklist()) {
		t.Errorf("the plan has %d check functions, the checklist %d checks", len(planChecks), len(rewrite.Checklist()))
	}
}

package featuregate_test

import (
	"strings"
	"testing"

	"github.com/csimigrate/csimigrate/featuregate"
)

// Releases newer than the table have its newest release's rules: no step
// of a release past the removal names a gate to set (1.37's
// kube-controller-manager refuses CSIMigrationRBD as unrecognized), and no
// step is an error.
func TestUpgradeStepsNewerReleases(t *testing.T) {
	for minor := 31; minor <= featuregate.MaxMinor+3; minor++ {
		for _, p := range featuregate.Plugins {
			for _, step := range featuregate.UpgradeSteps(minor, p) {
				if strings.Contains(step, "=true") || strings.Contains(step, "this package knows") {
					t.Errorf("1.%d, %s: %q", minor, p.InTreeName, step)
				}
			}
		}
	}
}

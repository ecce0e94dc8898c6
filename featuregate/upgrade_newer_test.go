package featuregate_test

import (
	"strings"
	"testing"

	"github.com/csimigrate/csimigrate/featuregate"
)

// Releases newer than the table have its newest release's rules: no step
// of a release past the removal names a gate to set (1.37's
// kube-controller-manager refuses CSIMigrationRBD as unrecognized), nor
// the gate of a plugin it lacks (CSIMigrationCephFS), and no step is an
// error.
func TestUpgradeStepsNewerReleases(t *testing.T) {
	for minor := 31; minor <= featuregate.MaxMinor+3; minor++ {
		for _, p := range featuregate.Plugins {
			for _, step := range featuregate.UpgradeSteps(minor, p) {
				// A plugin the release has removed: no gate of it at all
				// (CephFS's was this project's, for components built on
				// a release that still had the plugin).
				removed := p.InTreeRemovedIn != 0 && minor >= p.InTreeRemovedIn && p.TranslationRemovedIn != 0 || p.Project
				if strings.Contains(step, "=true") || strings.Contains(step, "this package knows") || removed && strings.Contains(step, string(p.Migration)) {
					t.Errorf("1.%d, %s: %q", minor, p.InTreeName, step)
				}
			}
		}
	}
}

package versioned_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
	k8sfeaturegate "k8s.io/component-base/featuregate"

	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/featuregate/versioned"
)

// TestSpecsAsComponentBaseReadsThem registers the specs on component-base's
// own versioned gate set and asks it, at each emulation version it accepts,
// for each gate's default: component-base's answer is featuregate.SpecAt's
// for every release the gate exists in.
func TestSpecsAsComponentBaseReadsThem(t *testing.T) {
	specs := versioned.Specs()
	if len(specs) != len(featuregate.AllGates()) {
		t.Fatalf("%d gates, want %d", len(specs), len(featuregate.AllGates()))
	}
	checked := 0
	for minor := featuregate.MinMinor; minor <= featuregate.MaxMinor; minor++ {
		fg := k8sfeaturegate.NewVersionedFeatureGate(version.MajorMinor(1, featuregate.MaxMinor))
		if err := fg.AddVersioned(specs); err != nil {
			t.Fatalf("AddVersioned: %v", err)
		}
		if err := fg.SetEmulationVersion(version.MajorMinor(1, uint(minor))); err != nil {
			continue // older than the binary's compatibility range
		}
		for f := range specs {
			want, ok := featuregate.SpecAt(f, minor)
			if !ok {
				continue // not in that release, or removed: not expressible
			}
			if got := fg.Enabled(f); got != want.Default {
				t.Errorf("1.%d %s: component-base says enabled=%v, the table %v", minor, f, got, want.Default)
			}
			checked++
		}
	}
	t.Logf("%d gate defaults checked", checked)
	if checked == 0 {
		t.Fatal("component-base accepted no emulation version")
	}
}

// TestSpecsAreCopies: changing what Specs returns changes nothing the
// package answers next.
func TestSpecsAreCopies(t *testing.T) {
	s := versioned.Specs()
	s[featuregate.CSIMigrationRBD][0].Default = true
	if versioned.Specs()[featuregate.CSIMigrationRBD][0].Default {
		t.Fatal("a caller's change reached the table")
	}
	l, _ := featuregate.LifecycleOf(featuregate.CSIMigrationRBD)
	l.Stages[0].Spec.Default = true
	if got, _ := featuregate.SpecAt(featuregate.CSIMigrationRBD, 23); got.Default {
		t.Fatal("a change of LifecycleOf's answer reached the table")
	}
}

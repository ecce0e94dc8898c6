// Package featuregate answers which component owns an in-tree plugin's
// volumes for any Kubernetes version and feature-gate settings, as
// Kubernetes itself decides (pkg/volume/csimigration), and plans the staged
// migration of a running cluster.
//
// [ForVersion] builds a k8s.io/component-base feature gate with exactly the
// CSI-migration gates a Kubernetes release had, with that release's
// defaults, stages and locks: setting a gate the release did not have fails
// with "unrecognized feature gate: X", setting a locked one with "cannot set
// feature gate X to Y, feature is locked to Z". [LifecycleOf] gives each
// gate's stages; package versioned gives them as component-base
// VersionedSpecs, which component-base has from 1.31 on (this package builds
// with k8s.io/component-base from v0.30).
//
// CephFS never had Kubernetes gates. [CSIMigrationCephFS] and
// [InTreePluginCephFSUnregister] are this project's own, for components built
// with csimigrate; [AddProjectGates] adds them to a gate set.
package featuregate

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/version"
	k8sfeaturegate "k8s.io/component-base/featuregate"
)

// Kubernetes' CSI-migration feature gates.
const (
	CSIMigration                    k8sfeaturegate.Feature = "CSIMigration"
	CSIMigrationAWS                 k8sfeaturegate.Feature = "CSIMigrationAWS"
	CSIMigrationGCE                 k8sfeaturegate.Feature = "CSIMigrationGCE"
	CSIMigrationOpenStack           k8sfeaturegate.Feature = "CSIMigrationOpenStack"
	CSIMigrationAzureDisk           k8sfeaturegate.Feature = "CSIMigrationAzureDisk"
	CSIMigrationAzureFile           k8sfeaturegate.Feature = "CSIMigrationAzureFile"
	CSIMigrationvSphere             k8sfeaturegate.Feature = "CSIMigrationvSphere"
	CSIMigrationPortworx            k8sfeaturegate.Feature = "CSIMigrationPortworx"
	CSIMigrationRBD                 k8sfeaturegate.Feature = "CSIMigrationRBD"
	CSIMigrationAWSComplete         k8sfeaturegate.Feature = "CSIMigrationAWSComplete"
	CSIMigrationGCEComplete         k8sfeaturegate.Feature = "CSIMigrationGCEComplete"
	CSIMigrationAzureDiskComplete   k8sfeaturegate.Feature = "CSIMigrationAzureDiskComplete"
	CSIMigrationAzureFileComplete   k8sfeaturegate.Feature = "CSIMigrationAzureFileComplete"
	CSIMigrationOpenStackComplete   k8sfeaturegate.Feature = "CSIMigrationOpenStackComplete"
	CSIMigrationvSphereComplete     k8sfeaturegate.Feature = "CSIMigrationvSphereComplete"
	InTreePluginAWSUnregister       k8sfeaturegate.Feature = "InTreePluginAWSUnregister"
	InTreePluginGCEUnregister       k8sfeaturegate.Feature = "InTreePluginGCEUnregister"
	InTreePluginAzureDiskUnregister k8sfeaturegate.Feature = "InTreePluginAzureDiskUnregister"
	InTreePluginAzureFileUnregister k8sfeaturegate.Feature = "InTreePluginAzureFileUnregister"
	InTreePluginOpenStackUnregister k8sfeaturegate.Feature = "InTreePluginOpenStackUnregister"
	InTreePluginvSphereUnregister   k8sfeaturegate.Feature = "InTreePluginvSphereUnregister"
	InTreePluginRBDUnregister       k8sfeaturegate.Feature = "InTreePluginRBDUnregister"
	InTreePluginPortworxUnregister  k8sfeaturegate.Feature = "InTreePluginPortworxUnregister"
	CSINodeExpandSecret             k8sfeaturegate.Feature = "CSINodeExpandSecret"
)

// This project's own gates for CephFS (never Kubernetes gates: the KEP that
// proposed them was withdrawn). They are known to every release in
// AddProjectGates and mean, for components built with csimigrate, what the
// RBD gates meant: migrate CephFS volumes to cephfs.csi.ceph.com, and treat
// the in-tree plugin as unregistered.
const (
	CSIMigrationCephFS           k8sfeaturegate.Feature = "CSIMigrationCephFS"
	InTreePluginCephFSUnregister k8sfeaturegate.Feature = "InTreePluginCephFSUnregister"
)

// Stage is one line of a gate's lifecycle: from minor release Since on the
// gate has this spec, until the next stage or its removal.
type Stage struct {
	Since int
	Spec  k8sfeaturegate.FeatureSpec
}

// Lifecycle is a gate's history in Kubernetes 1.x.
type Lifecycle struct {
	Stages []Stage
	// RemovedIn is the first minor release without the gate; 0 if still there.
	RemovedIn int
	// Project marks gates that are csimigrate's own, not Kubernetes'.
	Project bool
}

func alpha(on bool) k8sfeaturegate.FeatureSpec {
	return k8sfeaturegate.FeatureSpec{Default: on, PreRelease: k8sfeaturegate.Alpha}
}
func beta(on bool) k8sfeaturegate.FeatureSpec {
	return k8sfeaturegate.FeatureSpec{Default: on, PreRelease: k8sfeaturegate.Beta}
}
func ga(locked bool) k8sfeaturegate.FeatureSpec {
	return k8sfeaturegate.FeatureSpec{Default: true, LockToDefault: locked, PreRelease: k8sfeaturegate.GA}
}
func deprecated() k8sfeaturegate.FeatureSpec {
	return k8sfeaturegate.FeatureSpec{Default: false, PreRelease: k8sfeaturegate.Deprecated}
}

// lifecycles is the table of shared/reference/featuregates.md, read from
// kube_features.go of each release.
var lifecycles = map[k8sfeaturegate.Feature]Lifecycle{
	CSIMigration:          {Stages: []Stage{{14, alpha(false)}, {17, beta(true)}, {25, ga(true)}}, RemovedIn: 27},
	CSIMigrationAWS:       {Stages: []Stage{{14, alpha(false)}, {17, beta(false)}, {23, beta(true)}, {25, ga(true)}}, RemovedIn: 27},
	CSIMigrationGCE:       {Stages: []Stage{{14, alpha(false)}, {17, beta(false)}, {23, beta(true)}, {25, ga(true)}}, RemovedIn: 28},
	CSIMigrationOpenStack: {Stages: []Stage{{14, alpha(false)}, {18, beta(false)}, {21, beta(true)}, {24, ga(true)}}, RemovedIn: 26},
	CSIMigrationAzureDisk: {Stages: []Stage{{15, alpha(false)}, {19, beta(false)}, {23, beta(true)}, {24, ga(false)}, {25, ga(true)}}, RemovedIn: 27},
	CSIMigrationAzureFile: {Stages: []Stage{{15, alpha(false)}, {21, beta(false)}, {24, beta(true)}, {26, ga(false)}, {27, ga(true)}}, RemovedIn: 30},
	CSIMigrationvSphere:   {Stages: []Stage{{19, beta(false)}, {25, beta(true)}, {26, ga(true)}}, RemovedIn: 29},
	CSIMigrationPortworx:  {Stages: []Stage{{23, alpha(false)}, {25, beta(false)}, {31, beta(true)}, {33, ga(true)}}, RemovedIn: 36},
	CSIMigrationRBD:       {Stages: []Stage{{23, alpha(false)}, {28, deprecated()}}, RemovedIn: 31},

	CSIMigrationAWSComplete:       {Stages: []Stage{{17, alpha(false)}}, RemovedIn: 21},
	CSIMigrationGCEComplete:       {Stages: []Stage{{17, alpha(false)}}, RemovedIn: 21},
	CSIMigrationAzureDiskComplete: {Stages: []Stage{{17, alpha(false)}}, RemovedIn: 21},
	CSIMigrationAzureFileComplete: {Stages: []Stage{{17, alpha(false)}}, RemovedIn: 21},
	CSIMigrationOpenStackComplete: {Stages: []Stage{{17, alpha(false)}}, RemovedIn: 21},
	CSIMigrationvSphereComplete:   {Stages: []Stage{{19, beta(false)}}, RemovedIn: 22},

	InTreePluginAWSUnregister:       {Stages: []Stage{{21, alpha(false)}}, RemovedIn: 31},
	InTreePluginGCEUnregister:       {Stages: []Stage{{21, alpha(false)}}, RemovedIn: 31},
	InTreePluginAzureDiskUnregister: {Stages: []Stage{{21, alpha(false)}}, RemovedIn: 31},
	InTreePluginAzureFileUnregister: {Stages: []Stage{{21, alpha(false)}}, RemovedIn: 31},
	InTreePluginOpenStackUnregister: {Stages: []Stage{{21, alpha(false)}}, RemovedIn: 31},
	InTreePluginvSphereUnregister:   {Stages: []Stage{{21, alpha(false)}}, RemovedIn: 31},
	InTreePluginRBDUnregister:       {Stages: []Stage{{23, alpha(false)}, {28, deprecated()}}, RemovedIn: 31},
	InTreePluginPortworxUnregister:  {Stages: []Stage{{23, alpha(false)}}, RemovedIn: 36},

	CSINodeExpandSecret: {Stages: []Stage{{25, alpha(false)}, {27, beta(true)}, {29, ga(true)}}, RemovedIn: 31},

	CSIMigrationCephFS:           {Stages: []Stage{{14, beta(true)}}, Project: true},
	InTreePluginCephFSUnregister: {Stages: []Stage{{14, alpha(false)}}, Project: true},
}

// MinMinor and MaxMinor bound the releases this package knows.
const (
	MinMinor = 14
	MaxMinor = 37
)

// AllGates returns every gate name, sorted.
func AllGates() []k8sfeaturegate.Feature {
	out := make([]k8sfeaturegate.Feature, 0, len(lifecycles))
	for f := range lifecycles {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// LifecycleOf returns a gate's lifecycle, a copy: changing it changes
// nothing this package answers.
func LifecycleOf(f k8sfeaturegate.Feature) (Lifecycle, bool) {
	l, ok := lifecycles[f]
	l.Stages = slices.Clone(l.Stages)
	return l, ok
}

// SpecAt returns the gate's spec in release 1.minor, and whether that
// release has the gate.
func SpecAt(f k8sfeaturegate.Feature, minor int) (k8sfeaturegate.FeatureSpec, bool) {
	l, ok := lifecycles[f]
	if !ok || (l.RemovedIn != 0 && minor >= l.RemovedIn) {
		return k8sfeaturegate.FeatureSpec{}, false
	}
	var spec k8sfeaturegate.FeatureSpec
	found := false
	for _, s := range l.Stages {
		if s.Since <= minor {
			spec, found = s.Spec, true
		}
	}
	return spec, found
}

// ParseMinor parses "1.30", "v1.30.2" or "30" into the minor version 30.
func ParseMinor(s string) (int, error) {
	if v, err := version.ParseGeneric(s); err == nil {
		if v.Major() != 1 {
			return 0, fmt.Errorf("kubernetes version %q: want 1.x", s)
		}
		return int(v.Minor()), nil
	}
	var n int
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil || fmt.Sprint(n) != s {
		return 0, fmt.Errorf("kubernetes version %q: want 1.<minor>, for example 1.30", s)
	}
	return n, nil
}

// ForVersion returns a new mutable gate set with exactly the Kubernetes
// CSI-migration gates of release 1.minor (MinMinor..MaxMinor), with that
// release's defaults, stages and locks. Use a fresh one per configuration:
// component-base refuses further Set calls after a failed one.
func ForVersion(minor int) (k8sfeaturegate.MutableFeatureGate, error) {
	if minor < MinMinor || minor > MaxMinor {
		return nil, fmt.Errorf("kubernetes 1.%d: this package knows 1.%d to 1.%d", minor, MinMinor, MaxMinor)
	}
	fg := k8sfeaturegate.NewFeatureGate()
	specs := map[k8sfeaturegate.Feature]k8sfeaturegate.FeatureSpec{}
	for f, l := range lifecycles {
		if l.Project {
			continue
		}
		if s, ok := SpecAt(f, minor); ok {
			specs[f] = s
		}
	}
	if err := fg.Add(specs); err != nil {
		return nil, err
	}
	return fg, nil
}

// AddProjectGates adds this project's own CephFS gates to fg.
func AddProjectGates(fg k8sfeaturegate.MutableFeatureGate) error {
	specs := map[k8sfeaturegate.Feature]k8sfeaturegate.FeatureSpec{}
	for f, l := range lifecycles {
		if l.Project {
			specs[f] = l.Stages[0].Spec
		}
	}
	return fg.Add(specs)
}

// Gates is what the decision functions need of a gate set: both
// component-base's MutableFeatureGate and MutableVersionedFeatureGate (such as
// utilfeature.DefaultMutableFeatureGate) have it.
type Gates interface {
	Enabled(key k8sfeaturegate.Feature) bool
	GetAll() map[k8sfeaturegate.Feature]k8sfeaturegate.FeatureSpec
}

// enabled reports a gate's value, false for a gate fg does not know (where
// component-base's Enabled would panic).
func enabled(fg Gates, f k8sfeaturegate.Feature) bool {
	return known(fg, f) && fg.Enabled(f)
}

func known(fg Gates, f k8sfeaturegate.Feature) bool {
	if fg == nil {
		return false
	}
	_, ok := fg.GetAll()[f]
	return ok
}

// Package versioned gives the CSI-migration gates of package featuregate as
// component-base versioned specs, for a component that registers them on a
// versioned gate set (AddVersioned, with an emulation version).
//
// It needs k8s.io/component-base v0.31 or newer: VersionedSpecs and
// FeatureSpec.Version came in 1.31. The rest of the library builds with
// v0.30 too, so a 1.30 fork imports featuregate and not this package.
package versioned

import (
	"k8s.io/apimachinery/pkg/util/version"
	k8sfeaturegate "k8s.io/component-base/featuregate"

	"github.com/csimigrate/csimigrate/featuregate"
)

// Specs returns every gate's lifecycle as component-base versioned specs,
// one spec per stage, each with the release it began in. A removal is not
// expressible there: use featuregate.ForVersion for an exact release.
func Specs() map[k8sfeaturegate.Feature]k8sfeaturegate.VersionedSpecs {
	gates := featuregate.AllGates()
	out := make(map[k8sfeaturegate.Feature]k8sfeaturegate.VersionedSpecs, len(gates))
	for _, f := range gates {
		l, _ := featuregate.LifecycleOf(f)
		vs := make(k8sfeaturegate.VersionedSpecs, 0, len(l.Stages))
		for _, s := range l.Stages {
			spec := s.Spec
			spec.Version = version.MajorMinor(1, uint(s.Since))
			vs = append(vs, spec)
		}
		out[f] = vs
	}
	return out
}

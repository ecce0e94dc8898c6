package rewrite_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/rewrite"
)

func TestPodClaims(t *testing.T) {
	claim := func(name, claim string) v1.Volume {
		return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
	}
	ephemeral := func(name string) v1.Volume {
		return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}}
	}
	other := v1.Volume{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}}
	for _, tc := range []struct {
		name string
		pod  string
		vols []v1.Volume
		want []string
	}{
		{"none", "web-0", []v1.Volume{other}, nil},
		{"a claim", "web-0", []v1.Volume{other, claim("data", "data-web-0")}, []string{"data-web-0"}},
		{"an ephemeral volume: <pod>-<volume>", "web-0", []v1.Volume{ephemeral("scratch")}, []string{"web-0-scratch"}},
		{"both, in the volumes' order", "web-0", []v1.Volume{ephemeral("scratch"), claim("data", "d")}, []string{"web-0-scratch", "d"}},
		{"a template (no pod name) names no ephemeral claim", "", []v1.Volume{ephemeral("scratch"), claim("data", "d")}, []string{"d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, rewrite.PodClaims(tc.pod, &v1.PodSpec{Volumes: tc.vols})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if got := rewrite.PodClaims("p", nil); got != nil {
		t.Errorf("nil spec: %v", got)
	}
}

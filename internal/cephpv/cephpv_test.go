package cephpv_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/csimigrate/csimigrate/internal/cephpv"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Monitors that cannot be found because the clusterID is ambiguous give an
// error matching both the missing monitors and the lookup's cause.
func TestVolumeMonitorsWrapsLookup(t *testing.T) {
	cfg := ceph.NewClusterConfig(ceph.ClusterEntry{ClusterID: "b", Monitors: []string{"m1:6789"}}, ceph.ClusterEntry{ClusterID: "b", Monitors: []string{"m2:6789"}})
	_, err := cephpv.VolumeMonitors(cfg, cephpv.VolumeSources{ClusterID: "b"})
	if !errors.Is(err, ceph.ErrMonitorsNotFound) || !errors.Is(err, ceph.ErrAmbiguousClusterID) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), `clusterID "b"`) || !strings.Contains(err.Error(), "entries [0 1]") {
		t.Errorf("the error does not name the clusterID and entries: %v", err)
	}
}

// InTreeSecretRef resolves the namespace as the in-tree plugins did, and
// SecretNamespace gives the same namespace without building a reference.
func TestInTreeSecretRef(t *testing.T) {
	fp := field.NewPath("spec", "rbd", "secretRef")
	for _, tc := range []struct {
		name    string
		ref     *v1.SecretReference
		claimNS string
		want    *v1.SecretReference
		wantNS  string
		wantErr string
	}{
		{name: "no reference", ref: nil, claimNS: "app", wantNS: "app"},
		{name: "empty name is no secret", ref: &v1.SecretReference{Namespace: "ns"}, claimNS: "app", wantNS: "ns"},
		{name: "own namespace", ref: &v1.SecretReference{Name: "s", Namespace: "ns"}, claimNS: "app",
			want: &v1.SecretReference{Name: "s", Namespace: "ns"}, wantNS: "ns"},
		{name: "claim's namespace", ref: &v1.SecretReference{Name: "s"}, claimNS: "app",
			want: &v1.SecretReference{Name: "s", Namespace: "app"}, wantNS: "app"},
		{name: "neither", ref: &v1.SecretReference{Name: "s"}, wantErr: "spec.rbd.secretRef.namespace: Required value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before *v1.SecretReference
			if tc.ref != nil {
				before = tc.ref.DeepCopy()
			}
			got, ferr := cephpv.InTreeSecretRef(tc.ref, tc.claimNS, fp)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("reference (-want +got):\n%s", diff)
			}
			switch {
			case tc.wantErr == "" && ferr != nil:
				t.Errorf("error %v", ferr)
			case tc.wantErr != "" && (ferr == nil || !strings.HasPrefix(ferr.Error(), tc.wantErr)):
				t.Errorf("error %v, want %q", ferr, tc.wantErr)
			}
			if ns := cephpv.SecretNamespace(tc.ref, tc.claimNS); ns != tc.wantNS {
				t.Errorf("SecretNamespace = %q, want %q", ns, tc.wantNS)
			}
			if diff := cmp.Diff(before, tc.ref); diff != "" {
				t.Errorf("argument modified (-before +after):\n%s", diff)
			}
		})
	}
}

package main

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/csimigrate/csimigrate/rewrite"

	v1 "k8s.io/api/core/v1"
)

// The name of the PV and claim that replace an inline volume is a valid
// name for both (a DNS-1123 subdomain of at most 63 characters, so that it
// is also a valid label where one is needed), the same for the same
// workload and volume, and readable when the names allow it.
func FuzzInlineClaimName(f *testing.F) {
	f.Add("Deployment", "shop", "web", "test-volume")
	f.Add("Pod", "default", "rbd", "rbdpd")
	f.Add("StatefulSet", "ns", strings.Repeat("a", 250), "data")
	f.Add("Pod", "ns", "UPPER_case.name", "vol.1")
	f.Add("Job", "ns", "", "")
	f.Add("CronJob", "ns", "---", "äöü")
	f.Fuzz(func(t *testing.T, kind, ns, name, vol string) {
		w := &rewrite.Workload{Kind: kind, Namespace: ns, Name: name}
		got := rewrite.InlineClaimName(w, vol)
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 || len(got) > 63 {
			t.Fatalf("inlineClaimName(%q, %q) = %q: %v", name, vol, got, errs)
		}
		if again := rewrite.InlineClaimName(w, vol); again != got {
			t.Fatalf("not deterministic: %q, then %q", got, again)
		}
		plain := strings.ToLower(name + "-" + vol)
		if len(validation.IsDNS1123Subdomain(plain)) == 0 && len(plain) <= 63 && got != plain {
			t.Fatalf("a valid name %q was changed to %q", plain, got)
		}
		// The PV form of any inline source is a PV the command can print.
		for _, src := range []v1.VolumeSource{
			{RBD: &v1.RBDVolumeSource{CephMonitors: []string{vol}, RBDImage: name, SecretRef: &v1.LocalObjectReference{Name: vol}}},
			{CephFS: &v1.CephFSVolumeSource{Monitors: []string{vol}, Path: name}},
			{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: name}},
		} {
			pv := rewrite.InlinePV(&v1.Volume{Name: vol, VolumeSource: src}, ns, got, resource.MustParse("1Gi"))
			if pv == nil || pv.Name != got || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Namespace != ns || len(pv.Spec.AccessModes) != 1 {
				t.Fatalf("inlinePV: %+v", pv)
			}
			if c := rewrite.InlineClaim(pv, ns); c.Spec.VolumeName != got || c.Namespace != ns {
				t.Fatalf("inlineClaim: %+v", c)
			}
		}
	})
}

package compat

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	upstream "k8s.io/csi-translation-lib/plugins"
	"k8s.io/klog/v2"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/internal/cephpv"
	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/internal/testsupport/peertest"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
)

var logger = klog.Background().V(100)

// Every attribute upstream sets has the same value here, and the handle is
// byte-identical, for every generated RBD PV.
func TestRBDForwardMatchesUpstream(t *testing.T) {
	ours := rbd.New(rbd.Options{})
	theirs := upstream.NewRBDCSITranslator()
	rapid.Check(t, func(t *rapid.T) {
		pv := gen.RBDPV(t)
		if rapid.IntRange(0, 5).Draw(t, "annotatedHandle") == 0 {
			if pv.Annotations == nil {
				pv.Annotations = map[string]string{}
			}
			pv.Annotations[rbd.AnnVolumeHandle] = "0001-0009-cluster-1-0000000000000003-c867ff35-3f04-11ec-b823-0242ac110003"
			pv.Annotations[rbd.AnnClusterID] = "cluster-1"
		}
		got, err := ours.TranslateInTreePVToCSI(logger, pv)
		if err != nil {
			t.Fatal(err)
		}
		want, err := theirs.TranslateInTreePVToCSI(pv.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.CSI.VolumeHandle != want.Spec.CSI.VolumeHandle {
			t.Fatalf("handle %q, upstream %q", got.Spec.CSI.VolumeHandle, want.Spec.CSI.VolumeHandle)
		}
		for k, v := range want.Spec.CSI.VolumeAttributes {
			if g, ok := got.Spec.CSI.VolumeAttributes[k]; !ok || g != v {
				t.Fatalf("attribute %s = %q (present %v), upstream %q", k, g, ok, v)
			}
		}
		// Upstream copies the in-tree reference verbatim; ours resolves it as
		// the in-tree plugin did (an empty name is no secret, an empty
		// namespace the claim's), which the API server requires of the
		// controller-expand reference.
		wantRef, _ := cephpv.InTreeSecretRef(want.Spec.CSI.NodeStageSecretRef, cephpv.ClaimNamespace(pv), nil)
		if diff := cmp.Diff(wantRef, got.Spec.CSI.NodeStageSecretRef); diff != "" {
			t.Fatalf("node-stage secret (-upstream resolved +ours):\n%s", diff)
		}
		wantRef, _ = cephpv.InTreeSecretRef(want.Spec.CSI.ControllerExpandSecretRef, cephpv.ClaimNamespace(pv), nil)
		if diff := cmp.Diff(wantRef, got.Spec.CSI.ControllerExpandSecretRef); diff != "" {
			t.Fatalf("controller-expand secret (-upstream resolved +ours):\n%s", diff)
		}
		if diff := cmp.Diff(want.Spec.AccessModes, got.Spec.AccessModes); diff != "" {
			t.Fatalf("access modes (-upstream +ours):\n%s", diff)
		}
		if got.Spec.CSI.Driver != want.Spec.CSI.Driver || got.Spec.CSI.FSType != want.Spec.CSI.FSType {
			t.Fatalf("driver/fsType %q/%q, upstream %q/%q", got.Spec.CSI.Driver, got.Spec.CSI.FSType, want.Spec.CSI.Driver, want.Spec.CSI.FSType)
		}
	})
}

// Upstream's StorageClass parameters appear here with the same values.
func TestRBDStorageClassMatchesUpstream(t *testing.T) {
	ours := rbd.New(rbd.Options{})
	theirs := upstream.NewRBDCSITranslator()
	rapid.Check(t, func(t *rapid.T) {
		sc := gen.RBDStorageClass(t)
		got, err := ours.TranslateInTreeStorageClassToCSI(logger, sc)
		if err != nil {
			t.Fatal(err)
		}
		want, err := theirs.TranslateInTreeStorageClassToCSI(sc.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range want.Parameters {
			if g, ok := got.Parameters[k]; !ok || g != v {
				t.Fatalf("parameter %s = %q (present %v), upstream %q", k, g, ok, v)
			}
		}
		if got.Provisioner != want.Provisioner {
			t.Fatalf("provisioner %q, upstream %q", got.Provisioner, want.Provisioner)
		}
	})
}

// The vSphere forward translation matches upstream: handle, attributes,
// node affinity and labels, over PVs with and without node affinity and
// labels, with GA and beta keys.
func TestVSphereForwardMatchesUpstream(t *testing.T) {
	ours := vsphere.New(vsphere.Options{})
	theirs := upstream.NewvSphereCSITranslator()
	rapid.Check(t, func(t *rapid.T) {
		pv := gen.VSpherePV(t)
		got, err := ours.TranslateInTreePVToCSI(logger, pv)
		if err != nil {
			t.Fatal(err)
		}
		want, err := theirs.TranslateInTreePVToCSI(pv.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		// Deliberate differences: a path without ".vmdk" gets it, as
		// in-tree resolved it; a multi-zone label "zone-a__zone-b" is
		// split into values, as Kubernetes' scheduler reads it.
		if got.Spec.CSI.VolumeHandle != peertest.VSphereDeliberate(want.Spec.CSI.VolumeHandle) {
			t.Fatalf("handle %q, upstream %q", got.Spec.CSI.VolumeHandle, want.Spec.CSI.VolumeHandle)
		}
		splitMultiZone(want.Spec.NodeAffinity)
		if diff := cmp.Diff(want.Spec.CSI.VolumeAttributes, got.Spec.CSI.VolumeAttributes); diff != "" {
			t.Fatalf("attributes (-upstream +ours):\n%s", diff)
		}
		if diff := cmp.Diff(want.Spec.NodeAffinity, got.Spec.NodeAffinity); diff != "" {
			t.Fatalf("node affinity (-upstream +ours):\n%s", diff)
		}
		if diff := cmp.Diff(want.Labels, got.Labels); diff != "" {
			t.Fatalf("labels (-upstream +ours):\n%s", diff)
		}
	})
}

// splitMultiZone splits upstream's "zone-a__zone-b" values in place.
func splitMultiZone(na *v1.VolumeNodeAffinity) {
	if na == nil || na.Required == nil {
		return
	}
	for _, term := range na.Required.NodeSelectorTerms {
		for i, e := range term.MatchExpressions {
			if !slices.ContainsFunc(e.Values, func(v string) bool { return strings.Contains(v, "__") }) {
				continue
			}
			var vals []string
			for _, v := range e.Values {
				vals = append(vals, strings.Split(v, "__")...)
			}
			slices.Sort(vals)
			term.MatchExpressions[i].Values = slices.Compact(vals)
		}
	}
}

// For StorageClasses upstream translates without loss, the parameters and
// zone topology match.
func TestVSphereStorageClassMatchesUpstream(t *testing.T) {
	ours := vsphere.New(vsphere.Options{AllowUnsupportedParameters: true})
	theirs := upstream.NewvSphereCSITranslator()
	rapid.Check(t, func(t *rapid.T) {
		sc := gen.VSphereStorageClass(t)
		got, err := ours.TranslateInTreeStorageClassToCSI(logger, sc)
		want, uerr := theirs.TranslateInTreeStorageClassToCSI(sc.DeepCopy())
		if uerr != nil {
			t.Fatal(uerr)
		}
		if upstreamTopologyInvalid(want.AllowedTopologies) {
			// Upstream's defect: a GA and a beta zone key in one term become
			// duplicate keys, which Kubernetes rejects. Ours merges them or
			// refuses a term that could never match.
			if err == nil && upstreamTopologyInvalid(got.AllowedTopologies) {
				t.Fatalf("duplicate keys or terms in %+v", got.AllowedTopologies)
			}
			return
		}
		if err != nil && strings.Contains(err.Error(), "can never match") {
			// A GA and a beta key of one term with disjoint values: no node
			// carries both, so the term never matched in-tree either.
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.Parameters, got.Parameters); diff != "" {
			t.Fatalf("parameters (-upstream +ours):\n%s", diff)
		}
		// Upstream leaves region keys alone; we translate them too, and merge
		// requirements that land on one key (their values intersect).
		if len(got.AllowedTopologies) > len(want.AllowedTopologies) {
			t.Fatalf("%d terms, upstream %d", len(got.AllowedTopologies), len(want.AllowedTopologies))
		}
		for i, term := range want.AllowedTopologies {
			if !slices.ContainsFunc(got.AllowedTopologies, func(g v1.TopologySelectorTerm) bool { return corresponds(term, g) }) {
				t.Fatalf("upstream term %d %+v has no counterpart in %+v", i, term, got.AllowedTopologies)
			}
		}
	})
}

// upstreamTopologyInvalid reports duplicate keys within a term, or duplicate
// terms, which Kubernetes' StorageClass validation rejects.
func upstreamTopologyInvalid(terms []v1.TopologySelectorTerm) bool {
	seen := map[string]bool{}
	for _, t := range terms {
		keys := map[string]bool{}
		var canon []string
		for _, e := range t.MatchLabelExpressions {
			if keys[e.Key] {
				return true
			}
			keys[e.Key] = true
			vals := append([]string(nil), e.Values...)
			sort.Strings(vals)
			canon = append(canon, e.Key+"="+strings.Join(vals, ","))
		}
		sort.Strings(canon)
		k := strings.Join(canon, ";")
		if seen[k] {
			return true
		}
		seen[k] = true
	}
	return false
}

// corresponds reports whether ours is upstream's term with the region keys
// translated and same-key requirements merged.
func corresponds(upstreamTerm, ours v1.TopologySelectorTerm) bool {
	vals := map[string][]string{}
	for _, e := range ours.MatchLabelExpressions {
		vals[e.Key] = e.Values
	}
	keys := map[string]bool{}
	for _, e := range upstreamTerm.MatchLabelExpressions {
		k := e.Key
		if k == v1.LabelTopologyRegion || k == v1.LabelFailureDomainBetaRegion {
			k = vsphere.DefaultRegionKey
		}
		keys[k] = true
		v, ok := vals[k]
		if !ok {
			return false
		}
		for _, x := range v {
			if !slices.Contains(e.Values, x) {
				return false
			}
		}
	}
	return len(keys) == len(vals)
}

package vsphere

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// topologyLabels returns the zone and region keys an in-tree PV uses, in the
// order csi-translation-lib checks them: the GA zone key in node affinity, the
// beta zone key in node affinity, the GA zone label, the beta zone label,
// else the GA keys.
func topologyLabels(pv *v1.PersistentVolume) (zone, region string) {
	switch {
	case hasTopologyKey(pv.Spec.NodeAffinity, v1.LabelTopologyZone):
		return v1.LabelTopologyZone, v1.LabelTopologyRegion
	case hasTopologyKey(pv.Spec.NodeAffinity, v1.LabelFailureDomainBetaZone):
		return v1.LabelFailureDomainBetaZone, v1.LabelFailureDomainBetaRegion
	}
	if _, ok := pv.Labels[v1.LabelTopologyZone]; ok {
		return v1.LabelTopologyZone, v1.LabelTopologyRegion
	}
	if _, ok := pv.Labels[v1.LabelFailureDomainBetaZone]; ok {
		return v1.LabelFailureDomainBetaZone, v1.LabelFailureDomainBetaRegion
	}
	return v1.LabelTopologyZone, v1.LabelTopologyRegion
}

func requiredTerms(na *v1.VolumeNodeAffinity) []v1.NodeSelectorTerm {
	if na == nil || na.Required == nil {
		return nil
	}
	return na.Required.NodeSelectorTerms
}

// hasTopologyKey reports whether a match expression of any required term uses
// key.
func hasTopologyKey(na *v1.VolumeNodeAffinity, key string) bool {
	for _, t := range requiredTerms(na) {
		for _, r := range t.MatchExpressions {
			if r.Key == key {
				return true
			}
		}
	}
	return false
}

// hasTopologyValues reports whether topologyValues(na, key) is not empty,
// without allocating.
func hasTopologyValues(na *v1.VolumeNodeAffinity, key string) bool {
	for _, t := range requiredTerms(na) {
		for _, r := range t.MatchExpressions {
			if r.Key == key && len(r.Values) > 0 {
				return true
			}
		}
	}
	return false
}

// topologyValues returns the sorted distinct values of key's match
// expressions over all required terms.
func topologyValues(na *v1.VolumeNodeAffinity, key string) []string {
	var out []string
	for _, t := range requiredTerms(na) {
		for _, r := range t.MatchExpressions {
			if r.Key == key {
				out = append(out, r.Values...)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// replaceTopologyKey renames key from to key to in every match expression of
// pv's required terms. pv must be a copy owned by the caller.
func replaceTopologyKey(pv *v1.PersistentVolume, from, to string) {
	for _, t := range requiredTerms(pv.Spec.NodeAffinity) {
		for j := range t.MatchExpressions {
			if t.MatchExpressions[j].Key == from {
				t.MatchExpressions[j].Key = to
			}
		}
	}
}

// What addTopology had to create, so that removeTopology can undo it.
const (
	createdNone         = ""
	createdNodeAffinity = "nodeAffinity"
	createdRequired     = "required"
	createdTerms        = "terms"
)

// addTopology appends "key In values" (trimmed, deduplicated, sorted, empty
// ones dropped) to every required term of pv, creating the node affinity,
// its required selector or one term when missing, and reports what it
// created. Nothing is added when no value remains.
func addTopology(pv *v1.PersistentVolume, key string, values []string) (created string, added bool) {
	vals := make([]string, 0, len(values))
	for _, v := range values {
		if v = strings.TrimSpace(v); v != "" {
			vals = append(vals, v)
		}
	}
	slices.Sort(vals)
	vals = slices.Compact(vals)
	if len(vals) == 0 {
		return createdNone, false
	}
	switch {
	case pv.Spec.NodeAffinity == nil:
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{}
		created = createdNodeAffinity
		fallthrough
	case pv.Spec.NodeAffinity.Required == nil:
		pv.Spec.NodeAffinity.Required = &v1.NodeSelector{}
		if created == createdNone {
			created = createdRequired
		}
		fallthrough
	case len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) == 0:
		pv.Spec.NodeAffinity.Required.NodeSelectorTerms = make([]v1.NodeSelectorTerm, 1)
		if created == createdNone {
			created = createdTerms
		}
	}
	terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchExpressions = append(terms[i].MatchExpressions, v1.NodeSelectorRequirement{
			Key: key, Operator: v1.NodeSelectorOpIn, Values: slices.Clone(vals),
		})
	}
	return created, true
}

// removeTopology removes every match expression with key from pv's required
// terms and then undoes what addTopology reported it created.
func removeTopology(pv *v1.PersistentVolume, key, created string) {
	terms := requiredTerms(pv.Spec.NodeAffinity)
	for i := range terms {
		exprs := slices.DeleteFunc(terms[i].MatchExpressions, func(r v1.NodeSelectorRequirement) bool { return r.Key == key })
		if len(exprs) == 0 {
			exprs = nil
		}
		terms[i].MatchExpressions = exprs
	}
	switch created {
	case createdNodeAffinity:
		pv.Spec.NodeAffinity = nil
	case createdRequired:
		if pv.Spec.NodeAffinity != nil {
			pv.Spec.NodeAffinity.Required = nil
		}
	case createdTerms:
		if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil {
			pv.Spec.NodeAffinity.Required.NodeSelectorTerms = nil
		}
	}
}

// translateAllowedTopologies returns a copy of terms with every match label
// expression whose key is in keys renamed to keys[key]; other expressions
// pass through unchanged. Requirements of one term that land on the same key
// (a GA and a beta zone key, say) are merged into one whose values are the
// intersection, since a term's requirements all have to hold; Kubernetes
// rejects duplicate keys in a term (csi-translation-lib emits them). An empty
// intersection is an error naming the term, since such a term could never
// match. Terms that become identical are kept once.
func translateAllowedTopologies(terms []v1.TopologySelectorTerm, keys map[string]string) ([]v1.TopologySelectorTerm, error) {
	if terms == nil {
		return nil, nil
	}
	out := make([]v1.TopologySelectorTerm, 0, len(terms))
	seen := map[string]bool{}
	for i, t := range terms {
		var exprs []v1.TopologySelectorLabelRequirement
		for _, e := range t.MatchLabelExpressions {
			k := e.Key
			if nk, ok := keys[k]; ok {
				k = nk
			}
			j := slices.IndexFunc(exprs, func(x v1.TopologySelectorLabelRequirement) bool { return x.Key == k })
			if j < 0 {
				exprs = append(exprs, v1.TopologySelectorLabelRequirement{Key: k, Values: slices.Clone(e.Values)})
				continue
			}
			exprs[j].Values = slices.DeleteFunc(exprs[j].Values, func(v string) bool { return !slices.Contains(e.Values, v) })
			if len(exprs[j].Values) == 0 {
				return nil, fmt.Errorf("allowedTopologies[%d]: requirements on %s have no value in common, so the term can never match", i, k)
			}
		}
		canon := canonicalTerm(exprs)
		if seen[canon] {
			continue
		}
		seen[canon] = true
		out = append(out, v1.TopologySelectorTerm{MatchLabelExpressions: exprs})
	}
	return out, nil
}

// canonicalTerm is an order-independent key of a term.
func canonicalTerm(exprs []v1.TopologySelectorLabelRequirement) string {
	parts := make([]string, len(exprs))
	for i, e := range exprs {
		vals := slices.Clone(e.Values)
		slices.Sort(vals)
		parts[i] = e.Key + "=" + strings.Join(vals, "\x00")
	}
	slices.Sort(parts)
	return strings.Join(parts, "\x01")
}

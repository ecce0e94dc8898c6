package plan

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// render gives cp's missing entries in its deployment's form.
func (c *cephConfigInput) render(cp *CephCSIConfigPlan) {
	if len(cp.Missing) == 0 {
		return
	}
	existing := []json.RawMessage{}
	if m := c.maps[cp.Namespace+"/"+cp.ConfigMap]; m != nil && m.Data[cp.Key] != "" {
		if err := json.Unmarshal([]byte(m.Data[cp.Key]), &existing); err != nil {
			existing = nil
		}
	}
	switch cp.Deployment {
	case DeploymentOperator:
		if cp.Install {
			for _, d := range cp.Drivers {
				cp.Objects = append(cp.Objects, &unstructured.Unstructured{Object: map[string]any{"apiVersion": operatorGroup + "/v1", "kind": "Driver",
					"metadata": map[string]any{"name": d, "namespace": cp.Namespace}, "spec": map[string]any{}}})
			}
		}
		for _, e := range cp.Missing {
			conn := &unstructured.Unstructured{Object: map[string]any{"apiVersion": operatorGroup + "/v1", "kind": "CephConnection",
				"metadata": map[string]any{"name": e.ClusterID, "namespace": cp.Namespace},
				"spec":     map[string]any{"monitors": stringsAny(e.Monitors)}}}
			prof := &unstructured.Unstructured{Object: map[string]any{"apiVersion": operatorGroup + "/v1", "kind": clientProfileKind,
				"metadata": map[string]any{"name": e.ClusterID, "namespace": cp.Namespace},
				"spec":     map[string]any{"cephConnectionRef": map[string]any{"name": e.ClusterID}}}}
			cp.Objects = append(cp.Objects, conn, prof)
		}
	case DeploymentHelm:
		all := slices.Clone(existing)
		for _, e := range cp.Missing {
			b, _ := json.Marshal(e)
			all = append(all, b)
		}
		// JSON is YAML: a values file for helm upgrade -f, as it is, an
		// entry a line.
		lines := make([]string, len(all))
		for i, e := range all {
			var b bytes.Buffer
			if json.Compact(&b, e) != nil {
				return
			}
			lines[i] = "  " + b.String()
		}
		cp.HelmValues = "{\"csiConfig\": [\n" + strings.Join(lines, ",\n") + "\n]}"
	default:
		if existing == nil {
			// A map whose key does not parse is not merged into.
			return
		}
		all := slices.Clone(existing)
		for _, e := range cp.Missing {
			b, _ := json.Marshal(e)
			all = append(all, b)
		}
		b, err := json.Marshal(all)
		if err != nil {
			return
		}
		cm := &v1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: cp.ConfigMap, Namespace: cp.Namespace}, Data: map[string]string{cp.Key: string(b)}}
		if m := c.maps[cp.Namespace+"/"+cp.ConfigMap]; m != nil {
			cm.Labels, cm.Annotations = m.Labels, m.Annotations
		}
		cp.ConfigMapMerged = cm
	}
}

func stringsAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

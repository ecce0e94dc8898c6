package output

import (
	"encoding/json"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// WriteYAML writes objs as YAML documents, each after "---".
func WriteYAML(w io.Writer, objs ...any) error {
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "---\n%s", b); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON writes v as indented JSON.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// ClearSelfLink removes the legacy selfLink that dumps of clusters before
// 1.20 carry: the API server no longer sets it, and printed manifests
// should not hold it.
func ClearSelfLink(m *metav1.ObjectMeta) {
	//lint:ignore SA1019 clearing the deprecated field is the point
	m.SelfLink = ""
}

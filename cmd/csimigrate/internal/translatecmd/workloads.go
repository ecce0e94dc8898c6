package translatecmd

import (
	"reflect"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/output"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
)

// isInTreeInline reports whether vol is an inline volume of a plugin
// csimigrate knows.
func isInTreeInline(vol *v1.Volume) bool { return plugin.InTreeNameOfVolume(vol) != "" }

// forCreate clears what the server sets on a workload object: metadata it
// owns and the status (every workload kind has one).
func forCreate(w *rewrite.Workload) {
	m := w.Meta
	m.ResourceVersion, m.UID, m.Generation, m.CreationTimestamp, m.ManagedFields = "", "", 0, metav1.Time{}, nil
	output.ClearSelfLink(m)
	if status := reflect.ValueOf(w.Obj).Elem().FieldByName("Status"); status.CanSet() {
		status.SetZero()
	}
	if t, ok := w.Obj.(interface{ GetObjectKind() schema.ObjectKind }); ok {
		t.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(w.APIVersion, w.Kind))
	}
}

// Package check holds the checks of a translation's input that every
// built-in plugin makes the same way.
package check

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/csimigrate/csimigrate/plugin"
)

// PVName returns a PV's name for messages, "" for nil.
func PVName(pv *v1.PersistentVolume) string {
	if pv == nil {
		return ""
	}
	return pv.Name
}

// CSISource returns pv's CSI source when pv has one for driver; otherwise an
// error matching plugin.ErrInvalid that names spec.csi or spec.csi.driver.
func CSISource(pv *v1.PersistentVolume, driver string) (*v1.CSIPersistentVolumeSource, error) {
	if pv == nil || pv.Spec.CSI == nil {
		return nil, plugin.Invalid("PersistentVolume", PVName(pv), field.Required(field.NewPath("spec", "csi"), "a CSI volume source is required"))
	}
	if c := pv.Spec.CSI; c.Driver != driver {
		return nil, plugin.Invalid("PersistentVolume", pv.Name, field.NotSupported(field.NewPath("spec", "csi", "driver"), c.Driver, []string{driver}))
	}
	return pv.Spec.CSI, nil
}

// InTreePV returns an error matching plugin.ErrInvalid that names the
// missing in-tree source at spec.<source> (what: e.g. "an RBD volume
// source"), for a pv that is nil or lacks it.
func InTreePV(pv *v1.PersistentVolume, source, what string) error {
	return plugin.Invalid("PersistentVolume", PVName(pv), field.Required(field.NewPath("spec", source), what+" is required"))
}

// MissingMonitors wraps err, the *ceph.MonitorsNotFoundError of a reverse
// translation of PersistentVolume pvName, in a *plugin.MissingInformationError
// about fieldPath (e.g. "spec.rbd.monitors") that says how to supply them.
func MissingMonitors(pvName, fieldPath string, err error) error {
	return &plugin.MissingInformationError{
		Field:  fieldPath,
		Object: `PersistentVolume "` + pvName + `"`,
		Detail: err.Error() + "; supply Ceph CSI's config.json as an option, with one entry for the clusterID (it never yields monitors [\"\"])",
		Err:    err,
	}
}

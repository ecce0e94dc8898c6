package input

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// apiVersions are the apiVersions read for each kind: the current one and
// the older ones whose objects decode into the same Go type (what docs and
// old charts hold: extensions/v1beta1 Deployments, storage.k8s.io/v1beta1
// StorageClasses). One table; an object of another apiVersion is refused
// with the document named.
var apiVersions = map[string][]string{
	"PersistentVolume":      {"v1"},
	"PersistentVolumeClaim": {"v1"},
	"Pod":                   {"v1"},
	"Secret":                {"v1"},
	"ReplicationController": {"v1"},
	"StorageClass":          {"storage.k8s.io/v1", "storage.k8s.io/v1beta1"},
	"CSINode":               {"storage.k8s.io/v1", "storage.k8s.io/v1beta1"},
	"CSIDriver":             {"storage.k8s.io/v1", "storage.k8s.io/v1beta1"},
	"ConfigMap":             {"v1"},
	"Driver":                {"csi.ceph.io/v1", "csi.ceph.io/v1beta1", "csi.ceph.io/v1alpha1"},
	"ClientProfile":         {"csi.ceph.io/v1", "csi.ceph.io/v1beta1", "csi.ceph.io/v1alpha1"},
	"CephConnection":        {"csi.ceph.io/v1", "csi.ceph.io/v1beta1", "csi.ceph.io/v1alpha1"},
	"Deployment":            {"apps/v1", "apps/v1beta2", "apps/v1beta1", "extensions/v1beta1"},
	"StatefulSet":           {"apps/v1", "apps/v1beta2", "apps/v1beta1"},
	"DaemonSet":             {"apps/v1", "apps/v1beta2", "extensions/v1beta1"},
	"ReplicaSet":            {"apps/v1", "apps/v1beta2", "extensions/v1beta1"},
	"Job":                   {"batch/v1"},
	"CronJob":               {"batch/v1", "batch/v1beta1", "batch/v2alpha1"},
}

// selectorDefaulted are the apiVersions whose API server set a workload's
// missing spec.selector to its pod template's labels; apps/v1 requires the
// field, so an object of these versions without one gets it as its server
// stored it, and csimigrate translate prints an apps/v1 object the API
// server accepts.
var selectorDefaulted = map[string]bool{"extensions/v1beta1": true, "apps/v1beta1": true}

// checkAPIVersion refuses an object of a kind read whose apiVersion is not
// one csimigrate reads it in ("" is read as the current one).
func checkAPIVersion(kind, apiVersion string) error {
	want, ok := apiVersions[kind]
	if !ok || apiVersion == "" || slices.Contains(want, apiVersion) {
		return nil
	}
	return fmt.Errorf("apiVersion %q: csimigrate reads %s as %s", apiVersion, kind, strings.Join(want, ", "))
}

// defaultLegacy gives a workload of an older apiVersion what its API
// server defaulted and the current version requires: spec.selector from
// the template's labels (extensions/v1beta1, apps/v1beta1). A template
// without labels cannot give one: that is an error naming the field.
func defaultLegacy(apiVersion string, obj any) error {
	if !selectorDefaulted[apiVersion] {
		return nil
	}
	var sel **metav1.LabelSelector
	var labels map[string]string
	switch o := obj.(type) {
	case *appsv1.Deployment:
		sel, labels = &o.Spec.Selector, o.Spec.Template.Labels
	case *appsv1.StatefulSet:
		sel, labels = &o.Spec.Selector, o.Spec.Template.Labels
	case *appsv1.DaemonSet:
		sel, labels = &o.Spec.Selector, o.Spec.Template.Labels
	case *appsv1.ReplicaSet:
		sel, labels = &o.Spec.Selector, o.Spec.Template.Labels
	default:
		return nil
	}
	if *sel != nil {
		return nil
	}
	if len(labels) == 0 {
		return fmt.Errorf("spec.selector: absent, and spec.template.metadata.labels is empty (%s defaulted the selector to the template's labels; apps/v1 requires one): add labels to the pod template", apiVersion)
	}
	*sel = &metav1.LabelSelector{MatchLabels: maps.Clone(labels)}
	return nil
}

// secretDataError names the field of a Secret whose data could not be
// decoded (the value is never shown): data values must be base64.
func secretDataError(j []byte, err error) error {
	var s struct {
		Data map[string]json.RawMessage `json:"data"`
	}
	if json.Unmarshal(j, &s) != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(s.Data)) {
		var v string
		if json.Unmarshal(s.Data[k], &v) != nil {
			return fmt.Errorf("data[%q]: not a string; data values are base64 strings", k)
		}
		if _, derr := base64.StdEncoding.DecodeString(v); derr != nil {
			return fmt.Errorf("data[%q]: not base64 (%v); data values are base64 (kubectl create secret encodes them), plain text goes under stringData", k, derr)
		}
	}
	return err
}

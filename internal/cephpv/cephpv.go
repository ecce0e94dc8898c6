// Package cephpv is what the built-in RBD and CephFS plugins (and the
// command) share about Ceph PVs: where a reverse translation finds a
// volume's monitors, and how an in-tree secretRef resolves. Not for users:
// the cluster config is in plugins/ceph.
package cephpv

import (
	"strings"

	"github.com/csimigrate/csimigrate/internal/annot"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// VolumeSources are where a reverse translation finds the monitors of a CSI
// volume.
type VolumeSources struct {
	// Carried is the list a forward translation carried in an annotation,
	// in the encoding of that annotation; HasCarried says whether the
	// annotation was there.
	Carried    string
	HasCarried bool
	// Attributes are the volume attributes (read only).
	Attributes map[string]string
	// ClusterID is the volume's clusterID, "" when unknown.
	ClusterID string
}

// VolumeMonitors finds the monitors of a CSI volume for a reverse
// translation, in this order: the list carried in an annotation, the
// comma-separated "monitors" volume attribute a Ceph CSI volume context holds
// when the StorageClass had one, the entry of the clusterID in c. When none
// has them, the error is a *ceph.MonitorsNotFoundError.
func VolumeMonitors(c ceph.ClusterConfig, v VolumeSources) ([]string, error) {
	if v.HasCarried {
		mons, err := annot.DecodeList(v.Carried)
		if err == nil && len(mons) > 0 {
			return mons, nil
		}
	}
	if s := v.Attributes["monitors"]; s != "" {
		return strings.Split(s, ","), nil
	}
	if v.ClusterID == "" {
		return nil, &ceph.MonitorsNotFoundError{}
	}
	mons, err := c.Lookup(v.ClusterID)
	if err != nil {
		return nil, &ceph.MonitorsNotFoundError{ClusterID: v.ClusterID, Lookup: err}
	}
	return mons, nil
}

// InTreeSecretRef resolves the secretRef of an in-tree RBD or CephFS PV as
// the in-tree plugins did when they mounted it (getSecretNameAndNamespace
// and NewMounter in pkg/volume/rbd and pkg/volume/cephfs): a nil reference
// or one with an empty name is no secret (the plugin then read a keyring or
// secret file on the node); an empty namespace is the pod's, which for a PV
// is the namespace of its claim. It returns nil for no secret, and a field
// error at fp when the namespace is empty and the PV has no claim to take it
// from. claimNamespace is the namespace of the PV's claimRef ("" for none).
// ref is not modified.
func InTreeSecretRef(ref *v1.SecretReference, claimNamespace string, fp *field.Path) (*v1.SecretReference, *field.Error) {
	if ref == nil || ref.Name == "" {
		return nil, nil
	}
	if ref.Namespace != "" {
		return ref, nil
	}
	ns := SecretNamespace(ref, claimNamespace)
	if ns == "" {
		return nil, field.Required(fp.Child("namespace"),
			"the in-tree plugin took an empty namespace from the pod using the volume, and the PV has no claim to take it from; bind the PV to its claim (spec.claimRef) first")
	}
	return &v1.SecretReference{Name: ref.Name, Namespace: ns}, nil
}

// SecretNamespace returns the namespace [InTreeSecretRef] resolves ref's
// secret in: ref's own, else claimNamespace; "" when neither is set, which
// InTreeSecretRef reports as an error.
func SecretNamespace(ref *v1.SecretReference, claimNamespace string) string {
	if ref != nil && ref.Namespace != "" {
		return ref.Namespace
	}
	return claimNamespace
}

// ClaimNamespace returns the namespace of pv's claimRef, "" when it has none.
func ClaimNamespace(pv *v1.PersistentVolume) string {
	if pv == nil || pv.Spec.ClaimRef == nil {
		return ""
	}
	return pv.Spec.ClaimRef.Namespace
}

package secrets

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Prefix is the reserved namespace of StorageClass parameters that the CSI
// external-provisioner reads itself.
const Prefix = "csi.storage.k8s.io/"

// Kind is a kind of CSI secret reference.
type Kind string

// The kinds, in the order external-provisioner resolves them.
const (
	Provisioner       Kind = "provisioner"
	ControllerPublish Kind = "controller-publish"
	NodeStage         Kind = "node-stage"
	NodePublish       Kind = "node-publish"
	ControllerExpand  Kind = "controller-expand"
	NodeExpand        Kind = "node-expand"
	// ControllerModify is the secret external-provisioner v6 records on a
	// PV for external-resizer's ControllerModifyVolume (VolumeAttributesClass
	// changes), in the annotations
	// volume.kubernetes.io/controller-modify-secret-name and -namespace; a
	// CSI PV source has no field for it.
	ControllerModify Kind = "controller-modify"
)

// slots is the one table of the secret references, as every rule that
// applies to one spells it (external-provisioner's secretParamsMap,
// extended): its kind, from which its csi.storage.k8s.io/ parameter keys
// and its member name in csimigrate's overrides annotation derive; its
// deprecated parameter keys; where Refs holds it; and where a CSI PV source
// holds it (nil: nowhere; external-provisioner writes it as PV
// annotations). In the order external-provisioner resolves them. (Refs is
// read by value, so that reading a caller's Refs does not move it to the
// heap.)
var slots = []struct {
	kind                                Kind
	deprecatedName, deprecatedNamespace string
	get                                 func(Refs) *v1.SecretReference
	set                                 func(*Refs, *v1.SecretReference)
	source                              func(*v1.CSIPersistentVolumeSource) **v1.SecretReference
}{
	{Provisioner, "csiProvisionerSecretName", "csiProvisionerSecretNamespace", func(r Refs) *v1.SecretReference { return r.Provisioner }, func(r *Refs, v *v1.SecretReference) { r.Provisioner = v }, nil},
	{ControllerPublish, "csiControllerPublishSecretName", "csiControllerPublishSecretNamespace", func(r Refs) *v1.SecretReference { return r.ControllerPublish }, func(r *Refs, v *v1.SecretReference) { r.ControllerPublish = v },
		func(s *v1.CSIPersistentVolumeSource) **v1.SecretReference { return &s.ControllerPublishSecretRef }},
	{NodeStage, "csiNodeStageSecretName", "csiNodeStageSecretNamespace", func(r Refs) *v1.SecretReference { return r.NodeStage }, func(r *Refs, v *v1.SecretReference) { r.NodeStage = v },
		func(s *v1.CSIPersistentVolumeSource) **v1.SecretReference { return &s.NodeStageSecretRef }},
	{NodePublish, "csiNodePublishSecretName", "csiNodePublishSecretNamespace", func(r Refs) *v1.SecretReference { return r.NodePublish }, func(r *Refs, v *v1.SecretReference) { r.NodePublish = v },
		func(s *v1.CSIPersistentVolumeSource) **v1.SecretReference { return &s.NodePublishSecretRef }},
	{ControllerExpand, "", "", func(r Refs) *v1.SecretReference { return r.ControllerExpand }, func(r *Refs, v *v1.SecretReference) { r.ControllerExpand = v },
		func(s *v1.CSIPersistentVolumeSource) **v1.SecretReference { return &s.ControllerExpandSecretRef }},
	{NodeExpand, "", "", func(r Refs) *v1.SecretReference { return r.NodeExpand }, func(r *Refs, v *v1.SecretReference) { r.NodeExpand = v },
		func(s *v1.CSIPersistentVolumeSource) **v1.SecretReference { return &s.NodeExpandSecretRef }},
	{ControllerModify, "", "", func(r Refs) *v1.SecretReference { return r.ControllerModify }, func(r *Refs, v *v1.SecretReference) { r.ControllerModify = v }, nil},
}

// Kinds lists every kind, in the order external-provisioner resolves them.
var Kinds = func() []Kind {
	out := make([]Kind, len(slots))
	for i, s := range slots {
		out[i] = s.kind
	}
	return out
}()

// SourceField returns the accessor of the field of a CSI PV source that
// holds the kind's reference, nil for a kind a source does not carry
// (Provisioner, ControllerModify) and an unknown kind.
func (k Kind) SourceField() func(*v1.CSIPersistentVolumeSource) **v1.SecretReference {
	for _, s := range slots {
		if s.kind == k {
			return s.source
		}
	}
	return nil
}

// Keys are a kind's StorageClass parameter keys.
type Keys struct {
	Name, Namespace                     string
	DeprecatedName, DeprecatedNamespace string
}

// KeysOf returns the parameter keys of a kind.
func KeysOf(k Kind) Keys {
	keys := Keys{Name: Prefix + string(k) + "-secret-name", Namespace: Prefix + string(k) + "-secret-namespace"}
	for _, s := range slots {
		if s.kind == k {
			keys.DeprecatedName, keys.DeprecatedNamespace = s.deprecatedName, s.deprecatedNamespace
		}
	}
	return keys
}

// Annotations in which external-provisioner records, on a PV it creates,
// the provisioner secret it deletes the volume with, so that deletion does
// not depend on the StorageClass (which may change or go).
const (
	AnnDeletionSecretName      = "volume.kubernetes.io/provisioner-deletion-secret-name"
	AnnDeletionSecretNamespace = "volume.kubernetes.io/provisioner-deletion-secret-namespace"
)

// DefaultKeys is the fallback pair used by a kind that has neither key.
var DefaultKeys = Keys{Name: Prefix + "secret-name", Namespace: Prefix + "secret-namespace"}

// Error kinds of Resolve, for errors.Is.
var (
	ErrBothKeyStyles    = errors.New("both the deprecated and the csi.storage.k8s.io/ key are set")
	ErrHalfPair         = errors.New("only one of the secret name and namespace is set")
	ErrEmptyValue       = errors.New("secret name or namespace is empty")
	ErrUnknownToken     = errors.New("template has tokens that are not allowed")
	ErrInvalidName      = errors.New("resolved secret name is not a valid DNS-1123 subdomain")
	ErrInvalidNamespace = errors.New("resolved secret namespace is not a valid DNS-1123 label")
	ErrReservedKey      = errors.New("unknown parameter with the reserved csi.storage.k8s.io/ prefix")
	ErrMissingClaim     = errors.New("the template needs the claim, and none was given")
)

// ResolveError reports why a kind's reference cannot be resolved.
type ResolveError struct {
	// Kind is the reference kind ("" for the Default pair's own errors).
	Kind Kind
	// Keys are the parameters involved.
	Keys []string
	// Template and Resolved are the template and its result, when relevant
	// (secret names are not secret).
	Template, Resolved string
	// Tokens lists the offending tokens of ErrUnknownToken.
	Tokens []string
	// Err is one of the package's error kinds.
	Err error
}

// Error implements error.
func (e *ResolveError) Error() string {
	s := fmt.Sprintf("%s secret (%s): %v", e.Kind, strings.Join(e.Keys, ", "), e.Err)
	if len(e.Tokens) > 0 {
		s += fmt.Sprintf(" %q; allowed: ${pv.name}, ${pvc.namespace}, and in names also ${pvc.name} and ${pvc.annotations['<key>']}", e.Tokens)
	}
	if e.Template != "" || e.Resolved != "" {
		s += fmt.Sprintf(": template %q resolved to %q", e.Template, e.Resolved)
	}
	return s
}

// Unwrap returns the error kind.
func (e *ResolveError) Unwrap() error { return e.Err }

// Claim is what templates may refer to: the PV's name and the claim. PVC is
// nil when there is no claim (for example when a PV is deleted).
type Claim struct {
	PVName string
	PVC    *v1.PersistentVolumeClaim
}

// templates returns a kind's name and namespace templates, as
// external-provisioner's verifyAndGetSecretNameAndNamespaceTemplate does.
func templates(kind Kind, keys Keys, params map[string]string) (name, ns string, found bool, err error) {
	nName, nNS := 0, 0
	var used []string
	take := func(key string, dst *string, n *int) {
		if key == "" {
			return
		}
		if v, ok := params[key]; ok {
			*dst = v
			*n++
			used = append(used, key)
		}
	}
	take(keys.DeprecatedName, &name, &nName)
	take(keys.DeprecatedNamespace, &ns, &nNS)
	take(keys.Name, &name, &nName)
	take(keys.Namespace, &ns, &nNS)
	switch {
	case nName > 1 || nNS > 1:
		return "", "", false, &ResolveError{Kind: kind, Keys: used, Err: ErrBothKeyStyles}
	case nName != nNS:
		return "", "", false, &ResolveError{Kind: kind, Keys: used, Err: ErrHalfPair}
	case nName == 1 && (name == "" || ns == ""):
		return "", "", false, &ResolveError{Kind: kind, Keys: used, Err: ErrEmptyValue}
	}
	return name, ns, nName == 1, nil
}

// expand resolves a template with os.Expand, as external-provisioner does:
// "$pv.name" is the token "pv", "${}" expands to nothing.
func expand(tmpl string, vars map[string]string) (string, []string) {
	var missing []string
	out := os.Expand(tmpl, func(k string) string {
		v, ok := vars[k]
		if !ok {
			missing = append(missing, k)
		}
		return v
	})
	slices.Sort(missing)
	return out, slices.Compact(missing)
}

// Resolve returns the secret reference of a kind from StorageClass
// parameters, as external-provisioner (v3.3 to v6) computes it: the
// kind's csi.storage.k8s.io/ keys or its deprecated keys (not both), else the
// Default pair; templates in the namespace may use ${pv.name} and
// ${pvc.namespace}, in the name also ${pvc.name} and
// ${pvc.annotations['<key>']}; the namespace must resolve to a DNS-1123 label
// and the name to a DNS-1123 subdomain. It returns nil, nil when neither the
// kind nor the Default pair is set. Errors are *ResolveError matching one of
// ErrBothKeyStyles, ErrHalfPair, ErrEmptyValue, ErrUnknownToken,
// ErrMissingClaim, ErrInvalidName, ErrInvalidNamespace.
func Resolve(kind Kind, params map[string]string, c Claim) (*v1.SecretReference, error) {
	keys := KeysOf(kind)
	nameT, nsT, found, err := templates(kind, keys, params)
	if err != nil {
		return nil, err
	}
	if !found {
		keys = DefaultKeys
		if nameT, nsT, found, err = templates(kind, keys, params); err != nil || !found {
			return nil, err
		}
	}
	nsVars := map[string]string{"pv.name": c.PVName}
	nameVars := map[string]string{"pv.name": c.PVName}
	if c.PVC != nil {
		nsVars["pvc.namespace"] = c.PVC.Namespace
		nameVars["pvc.namespace"] = c.PVC.Namespace
		nameVars["pvc.name"] = c.PVC.Name
		for k, v := range c.PVC.Annotations {
			nameVars["pvc.annotations['"+k+"']"] = v
		}
	}
	usedKeys := []string{keys.Name, keys.Namespace}
	ns, missing := expand(nsT, nsVars)
	if len(missing) > 0 {
		return nil, tokenError(kind, usedKeys, nsT, missing, c.PVC == nil)
	}
	if len(validation.IsDNS1123Label(ns)) > 0 {
		return nil, &ResolveError{Kind: kind, Keys: usedKeys, Template: nsT, Resolved: ns, Err: ErrInvalidNamespace}
	}
	name, missing := expand(nameT, nameVars)
	if len(missing) > 0 {
		return nil, tokenError(kind, usedKeys, nameT, missing, c.PVC == nil)
	}
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, &ResolveError{Kind: kind, Keys: usedKeys, Template: nameT, Resolved: name, Err: ErrInvalidName}
	}
	return &v1.SecretReference{Name: name, Namespace: ns}, nil
}

func tokenError(kind Kind, keys []string, tmpl string, missing []string, noClaim bool) error {
	if noClaim {
		claimOnly := true
		for _, m := range missing {
			claimOnly = claimOnly && (m == "pvc.namespace" || m == "pvc.name" || strings.HasPrefix(m, "pvc.annotations['"))
		}
		if claimOnly {
			return &ResolveError{Kind: kind, Keys: keys, Template: tmpl, Tokens: missing, Err: ErrMissingClaim}
		}
	}
	return &ResolveError{Kind: kind, Keys: keys, Template: tmpl, Tokens: missing, Err: ErrUnknownToken}
}

// Refs are the references a CSI PV carries (the provisioner's is used only
// for CreateVolume and DeleteVolume, the controller-modify one only by
// external-resizer, through PV annotations).
type Refs struct {
	Provisioner, ControllerPublish, NodeStage, NodePublish, ControllerExpand, NodeExpand, ControllerModify *v1.SecretReference
}

// ResolveAll resolves every kind. The first error is returned; every error
// names its kind.
func ResolveAll(params map[string]string, c Claim) (Refs, error) {
	var r Refs
	for _, s := range slots {
		ref, err := Resolve(s.kind, params, c)
		if err != nil {
			return Refs{}, err
		}
		s.set(&r, ref)
	}
	return r, nil
}

// ApplyTo sets the references a CSI PV source carries (all but the
// provisioner's and the controller-modify one, which external-provisioner
// writes as PV annotations).
func (r Refs) ApplyTo(src *v1.CSIPersistentVolumeSource) {
	for _, s := range slots {
		if s.source != nil {
			*s.source(src) = s.get(r)
		}
	}
}

// NodeExpandSecretRef computes a CSI PV's nodeExpandSecretRef (KEP-3107)
// from its StorageClass and claim, as external-provisioner v3.3+ does; nil
// when the StorageClass sets neither the node-expand keys nor the Default
// pair.
func NodeExpandSecretRef(sc *storagev1.StorageClass, pvName string, pvc *v1.PersistentVolumeClaim) (*v1.SecretReference, error) {
	if sc == nil {
		return nil, nil
	}
	return Resolve(NodeExpand, sc.Parameters, Claim{PVName: pvName, PVC: pvc})
}

// reservedKeys are the csi.storage.k8s.io/ keys external-provisioner knows.
var reservedKeys = func() map[string]bool {
	m := map[string]bool{Prefix + "fstype": true, DefaultKeys.Name: true, DefaultKeys.Namespace: true}
	for _, k := range Kinds {
		keys := KeysOf(k)
		m[keys.Name], m[keys.Namespace] = true, true
	}
	return m
}()

// ReservedKeys returns, sorted, the StorageClass parameters under the
// csi.storage.k8s.io/ prefix that external-provisioner (v6.4) consumes
// itself: fstype and the name and namespace keys of every kind and of the
// Default pair. Any other key under the prefix makes it refuse the class.
func ReservedKeys() []string {
	return slices.Sorted(maps.Keys(reservedKeys))
}

// StripReserved returns the parameters a driver receives: a copy without the
// csi.storage.k8s.io/ keys external-provisioner consumes. An unknown key
// under that prefix is an error matching ErrReservedKey ("found unknown
// parameter key ... with reserved namespace csi.storage.k8s.io/"), as the
// provisioner refuses it. The deprecated csi* keys are passed through, as the
// provisioner does for backwards compatibility.
func StripReserved(params map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(params))
	var unknown []string
	for k, v := range params {
		if !strings.HasPrefix(k, Prefix) {
			out[k] = v
			continue
		}
		if !reservedKeys[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("%w: found unknown parameter keys %q with reserved namespace %s", ErrReservedKey, unknown, Prefix)
	}
	return out, nil
}

// Package plugin defines [InTreePlugin], the interface every migration
// translator implements, with the error kinds, findings and annotations its
// implementations share. The built-in plugins are in the subpackages rbd,
// cephfs and vsphere; a third-party plugin implements InTreePlugin (and, if it
// can, [NonMutating] and [Checker]) and is registered with
// translate.WithPlugins.
//
// The interface has exactly the method set of
// k8s.io/csi-translation-lib/plugins.InTreePlugin (v0.37), so a plugin written
// for either library can be registered in the other.
//
// The contract of this project's plugins is stricter than upstream's:
//
//   - a plugin never modifies its arguments and never panics, on any input;
//   - returned objects share no memory with the inputs;
//   - errors name the offending field (a *[InvalidError] wrapping a
//     field.ErrorList, matched by errors.Is(err, [ErrInvalid])), carry the bad
//     value where it is not secret, and say what would be accepted;
//   - translation is lossless: what the CSI side has no field for is carried in
//     documented annotations, so CSI to in-tree and back gives the same object;
//   - the handle contract: where csi-translation-lib translates the same
//     in-tree plugin (vSphere in every release, RBD up to v0.30), forward
//     translation of any in-tree PV gives the driver and volume handle it
//     gives (v0.30.14 for RBD, the newest release for vSphere), including the
//     in-tree PVs a reverse translation or a provisioning round trip stored.
//     Stock kubelets and kube-controller-managers beside components on this
//     library then compute the same VolumeAttachment and kubelet volume names.
//     Where losslessness would restore another handle (a vSphere volume the
//     driver provisioned: its FCD ID), the stock handle wins and the other is
//     kept in [AnnOriginalVolumeHandle] for the next reverse translation.
package plugin

import (
	"errors"
	"strings"

	v1 "k8s.io/api/core/v1"
	storage "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
)

// InTreePlugin translates between one in-tree volume plugin and its CSI
// driver. Its method set is that of csi-translation-lib's InTreePlugin.
//
// Implementations in this module additionally guarantee: arguments are never
// modified, no method panics for any input, outputs share no memory with
// inputs, errors name the offending field, and TranslateInTreePVToCSI gives
// the driver and handle csi-translation-lib gives for the same PV where it
// has a translator for the plugin (see the package documentation).
type InTreePlugin interface {
	// TranslateInTreeStorageClassToCSI translates the parameters of a
	// StorageClass of the in-tree provisioner to those of the CSI driver.
	TranslateInTreeStorageClassToCSI(logger klog.Logger, sc *storage.StorageClass) (*storage.StorageClass, error)

	// TranslateInTreeInlineVolumeToCSI translates a pod's inline in-tree
	// volume to a PV with a CSI source. podNamespace is the pod's namespace,
	// used for secret references that an inline volume scopes to the pod.
	TranslateInTreeInlineVolumeToCSI(logger klog.Logger, volume *v1.Volume, podNamespace string) (*v1.PersistentVolume, error)

	// TranslateInTreePVToCSI translates a PV with an in-tree source to one
	// with a CSI source.
	TranslateInTreePVToCSI(logger klog.Logger, pv *v1.PersistentVolume) (*v1.PersistentVolume, error)

	// TranslateCSIPVToInTree translates a PV with a CSI source of this
	// plugin's driver back to the in-tree source.
	TranslateCSIPVToInTree(pv *v1.PersistentVolume) (*v1.PersistentVolume, error)

	// CanSupport reports whether the PV has this plugin's in-tree source.
	CanSupport(pv *v1.PersistentVolume) bool

	// CanSupportInline reports whether the volume has this plugin's in-tree
	// source.
	CanSupportInline(vol *v1.Volume) bool

	// GetInTreePluginName returns the in-tree plugin name, e.g.
	// "kubernetes.io/rbd".
	GetInTreePluginName() string

	// GetCSIPluginName returns the CSI driver name, e.g. "rbd.csi.ceph.com".
	GetCSIPluginName() string

	// RepairVolumeHandle returns a volume handle corrected with the node ID,
	// for drivers whose handles depend on the node.
	RepairVolumeHandle(volumeHandle, nodeID string) (string, error)
}

// Checker is implemented by plugins that can report migration hazards of a
// PV: conditions under which translation succeeds but the migrated volume
// would misbehave, or under which it must not be migrated yet.
type Checker interface {
	// CheckPV returns the findings for pv; none when pv is not this plugin's.
	CheckPV(pv *v1.PersistentVolume) []Finding
}

// Severity ranks a Finding.
type Severity string

const (
	// SeverityWarning marks a hazard the migration can go ahead with, with
	// the remedy applied or accepted.
	SeverityWarning Severity = "Warning"
	// SeverityBlocker marks a condition that prevents migrating the volume
	// until an administrator acts.
	SeverityBlocker Severity = "Blocker"
)

// Finding is a migration hazard found in one object: by a plugin in a PV,
// StorageClass or volume; by featuregate in a node's gates; by envcheck in a
// vSphere environment.
type Finding struct {
	// Code is a stable identifier, e.g. "RBDHandleResolvesElsewhere".
	Code string `json:"code"`
	// Severity says whether the finding blocks the migration.
	Severity Severity `json:"severity"`
	// Object names the object at fault when it is not the one checked,
	// e.g. "node/n1", "host/esx1", "Secret ns/name", "vCenter".
	Object string `json:"object,omitempty"`
	// Field is the path of the field at fault, e.g. "spec.rbd.image".
	Field string `json:"field,omitempty"`
	// Message explains the hazard. It never contains secret data.
	Message string `json:"message"`
	// Remedy says what an administrator can do about it, in the engine's
	// words, which name no program's commands or flags.
	Remedy string `json:"remedy,omitempty"`
	// Action is the remedy as data, when a program may word it with its
	// own commands and flags ("" when Remedy says all); ActsOn names what
	// it acts on (the input's kind, a Secret, an in-tree plugin), which may
	// be another object than Object.
	Action Action `json:"action,omitempty"`
	ActsOn string `json:"actsOn,omitempty"`
}

// Action is what a remedy asks an administrator to do, as data: each
// program that reports a Finding or a refusal words it in its own terms
// (the command with its flags, a controller with its options), and falls
// back to the engine's Remedy text for an Action it does not know.
type Action string

// The actions of the engine's remedies.
const (
	// ActionGiveInput: the input lacks the objects a check needs; Object
	// names their kind ("PersistentVolumeClaims", "Secrets").
	ActionGiveInput Action = "GiveInput"
	// ActionStopPods: pods use the volume; stop them, or rewrite it online
	// where their nodes already migrate the plugin. Object: the claim.
	ActionStopPods Action = "StopPods"
	// ActionGiveCephAccess: the step reads or writes Ceph with Ceph's
	// tools, and no access to Ceph was given.
	ActionGiveCephAccess Action = "GiveCephAccess"
	// ActionSetVSphereTopology: translate with the topology keys the
	// vSphere CSI driver reports (its topology-categories).
	ActionSetVSphereTopology Action = "SetVSphereTopology"
	// ActionCreateSecret: create or complete the Secret of Object with the
	// fields the remedy names (the plan lists them).
	ActionCreateSecret Action = "CreateSecret"
	// ActionChooseDriver: the cluster has more than one CSI driver for the
	// in-tree plugin of ActsOn; choose the one its volumes go to.
	ActionChooseDriver Action = "ChooseDriver"
	// ActionAddCephEntry: add the Ceph CSI cluster entry of ActsOn (a
	// clusterID) where the cluster's Ceph CSI deployment reads its config,
	// in the form that lasts there.
	ActionAddCephEntry Action = "AddCephEntry"
	// ActionChangeSource: a reconciler keeps the object of ActsOn (as
	// kubectl's TYPE/NAME: "pv/NAME", "storageclass/NAME") from a source
	// of its own; put the new form there, then say that the source has
	// changed.
	ActionChangeSource Action = "ChangeSource"
)

// Errors that every plugin and the translator wrap, for errors.Is.
var (
	// ErrInvalid: the input object is not valid for translation; the error is
	// an *InvalidError naming the fields.
	ErrInvalid = errors.New("invalid object")
	// ErrUnsupported: the plugin has no translation for this kind of object
	// (for example a CephFS StorageClass: in-tree CephFS had no provisioner).
	ErrUnsupported = errors.New("translation not supported")
	// ErrMissingInformation: the object is valid but lacks information the
	// translation needs and no option supplied it (for example the Ceph
	// monitors of a CSI volume whose clusterID is not in the given config).
	ErrMissingInformation = errors.New("information needed for translation is missing")
)

// InvalidError reports the fields of an object that prevent translation.
type InvalidError struct {
	// Kind is the object's kind, e.g. "PersistentVolume".
	Kind string
	// Name is the object's name, possibly empty.
	Name string
	// Errs names each offending field.
	Errs field.ErrorList
}

// Error implements error.
func (e *InvalidError) Error() string {
	var b strings.Builder
	b.WriteString(e.Kind)
	if e.Name != "" {
		b.WriteString(" \"")
		b.WriteString(e.Name)
		b.WriteString("\"")
	}
	b.WriteString(" cannot be translated: ")
	b.WriteString(e.Errs.ToAggregate().Error())
	return b.String()
}

// Is reports whether target is ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns the field errors, so errors.As can reach a *field.Error.
func (e *InvalidError) Unwrap() []error {
	out := make([]error, len(e.Errs))
	for i, fe := range e.Errs {
		out[i] = fe
	}
	return out
}

// Invalid returns an *InvalidError, or nil when errs is empty.
func Invalid(kind, name string, errs ...*field.Error) error {
	if len(errs) == 0 {
		return nil
	}
	return &InvalidError{Kind: kind, Name: name, Errs: errs}
}

// MissingInformationError reports information a translation needs that is
// neither in the object nor in the options.
type MissingInformationError struct {
	// Field is the path of what is missing, e.g. "spec.rbd.monitors".
	Field string
	// Object names the object, e.g. `PersistentVolume "pv-1"`.
	Object string
	// Detail says where the information was looked for and how to supply it.
	Detail string
	// Err is the cause where there is one (for example a
	// *ceph.LookupError), or nil.
	Err error
}

// Error implements error.
func (e *MissingInformationError) Error() string {
	return e.Object + ": cannot determine " + e.Field + ": " + e.Detail
}

// Unwrap returns ErrMissingInformation and the cause, if any.
func (e *MissingInformationError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrMissingInformation}
	}
	return []error{ErrMissingInformation, e.Err}
}

// UnsupportedError reports a translation the plugin does not offer.
type UnsupportedError struct {
	// Plugin is the in-tree plugin name.
	Plugin string
	// What names the translation, e.g. "StorageClass translation".
	What string
	// Reason explains why and what to do instead.
	Reason string
}

// Error implements error.
func (e *UnsupportedError) Error() string {
	return e.Plugin + ": " + e.What + " is not supported: " + e.Reason
}

// Unwrap returns ErrUnsupported.
func (e *UnsupportedError) Unwrap() error { return ErrUnsupported }

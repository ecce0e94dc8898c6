// Package rbd translates the removed in-tree RBD plugin (kubernetes.io/rbd)
// to the Ceph CSI RBD driver (rbd.csi.ceph.com) and back.
//
// Forward translation of a PV is byte-compatible with k8s.io/csi-translation-lib
// v0.30.14, the last release with an RBD translator: the same volume handle
// and the same values for every volume attribute it sets, so components on
// either library agree on VolumeAttachment names and on what Ceph CSI deletes
// and expands. Unlike that library, translation here is lossless both ways:
//
//	in-tree (spec.rbd)        CSI (spec.csi)
//	monitors                  handle and attribute clusterID (MD5 of the joined list);
//	                          annotation rbd.csimigrate.io/monitors
//	image                     attribute imageName; handle
//	pool                      attribute pool (as given); handle (hex)
//	user                      annotation rbd.csimigrate.io/user
//	keyring                   annotation rbd.csimigrate.io/keyring (when set)
//	secretRef                 nodeStageSecretRef, controllerExpandSecretRef,
//	                          nodeExpandSecretRef (unless disabled); an empty
//	                          namespace is the claim's, an empty name no
//	                          secret, as in-tree (the original in annotation
//	                          rbd.csimigrate.io/secret-ref)
//	fsType                    fsType
//	readOnly                  readOnly; access modes [ReadOnlyMany]
//	accessModes               [ReadWriteOnce] or [ReadOnlyMany]; the originals in
//	                          annotation csimigrate.io/access-modes when different
//	annotations imageFeatures,  attributes imageFeatures (default layering),
//	  imageFormat, journalPool  imageFormat, journalPool
//
// plus the attributes staticVolume=true, migration=true and
// tryOtherMounters=true. A PV annotated rbd.csi.ceph.com/volume-handle uses that
// handle and the clusterID of annotation clusterID, as upstream.
//
// The reverse translation never writes monitors [""]: it takes them from the
// carried annotation, from the "monitors" attribute of a Ceph CSI volume
// context, or from the Ceph CSI cluster config given in [Options], and fails
// with an error matching plugin.ErrMissingInformation otherwise. For CSI PVs
// that did not come from a forward translation it writes upstream's
// annotations (rbd.csi.ceph.com/volume-handle, clusterID, journalPool,
// imageFeatures, imageFormat) and plugin.AnnCSIOverrides, so that forward
// translation gives the CSI source back.
//
// Hazard: the handle format cannot represent an image without the
// "kubernetes-dynamic-pvc-" prefix or with "_" in its name; Ceph CSI then
// deletes or expands a different image (see volumeid.UnrepresentableError).
// The handle stays upstream's (mounts work); [Plugin.CheckPV] reports it, and
// the forward translation logs it.
package rbd

import (
	"cmp"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	storage "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/internal/annot"
	"github.com/csimigrate/csimigrate/internal/cephpv"
	"github.com/csimigrate/csimigrate/internal/check"
	"github.com/csimigrate/csimigrate/internal/overrides"
	"github.com/csimigrate/csimigrate/internal/pvcopy"
	"github.com/csimigrate/csimigrate/internal/scparams"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/volumeid"
)

// Names of the in-tree plugin, kubernetes.io/rbd, and the CSI driver, rbd.csi.ceph.com.
const (
	PluginName = plugin.RBDInTreePluginName
	DriverName = plugin.RBDDriverName
)

// Annotations read and written on PVs.
const (
	// AnnVolumeHandle: a PV with this annotation is translated to this handle
	// (upstream's key).
	AnnVolumeHandle = "rbd.csi.ceph.com/volume-handle"
	// AnnClusterID is the clusterID used with AnnVolumeHandle (upstream's key).
	AnnClusterID = "clusterID"
	// AnnImageFeatures, AnnImageFormat and AnnJournalPool become volume
	// attributes of the same names (upstream's keys).
	AnnImageFeatures = "imageFeatures"
	AnnImageFormat   = "imageFormat"
	AnnJournalPool   = "journalPool"

	// AnnMonitors carries the in-tree monitor list on a translated PV, in
	// the encoding of plugin.AnnAccessModes (usually comma-joined).
	AnnMonitors = "rbd.csimigrate.io/monitors"
	// AnnUser carries the in-tree RADOS user (possibly empty).
	AnnUser = "rbd.csimigrate.io/user"
	// AnnKeyring carries the in-tree keyring path when it is set.
	AnnKeyring = "rbd.csimigrate.io/keyring"
	// AnnSecretRef carries the in-tree secretRef, as the JSON of a
	// SecretReference, when the CSI references are not that reference
	// verbatim: an empty name (no secret, as in-tree), or an empty namespace
	// (the claim's, as in-tree; see cephpv.InTreeSecretRef).
	AnnSecretRef = "rbd.csimigrate.io/secret-ref"
	// AnnDroppedParameters is set on a translated StorageClass to the
	// in-tree parameters that Ceph CSI has no counterpart for, as a JSON
	// object of key to value (userId, userSecretName, userSecretNamespace,
	// keyring).
	AnnDroppedParameters = "rbd.csimigrate.io/dropped-parameters"
)

// Volume attribute and StorageClass parameter keys.
const (
	attrClusterID        = "clusterID"
	attrStaticVolume     = "staticVolume"
	attrImageName        = "imageName"
	attrPool             = "pool"
	attrImageFeatures    = "imageFeatures"
	attrImageFormat      = "imageFormat"
	attrJournalPool      = "journalPool"
	attrMigration        = "migration"
	attrTryOtherMounters = "tryOtherMounters"
	attrMonitors         = "monitors"
	attrAdminID          = "adminId"

	defaultImageFeatures = "layering"
	defaultUser          = "admin"
	defaultSecretNS      = "default"
)

// Options configure the plugin. The zero value is upstream-compatible with
// the node-expand secret on.
type Options struct {
	// DriverName is the name the cluster's CSI driver runs under ("": DriverName):
	// translated PVs and StorageClasses name it, and only its PVs are
	// translated back. translate.WithDriverName checks it.
	DriverName string
	// ClusterConfig maps clusterIDs to monitors (Ceph CSI's config.json), for
	// reverse translation of CSI volumes that carry no monitors.
	ClusterConfig ceph.ClusterConfig
	// DisableNodeExpandSecret leaves nodeExpandSecretRef unset, for clusters
	// where the CSINodeExpandSecret feature gate is off.
	DisableNodeExpandSecret bool
}

// Plugin is the RBD translator. Create it with New; it is safe for concurrent
// use.
type Plugin struct {
	opts Options
}

var (
	_ plugin.InTreePlugin = (*Plugin)(nil)
	_ plugin.Checker      = (*Plugin)(nil)
)

// New returns an RBD translator.
func New(opts Options) *Plugin {
	return &Plugin{opts: opts}
}

// GetInTreePluginName returns "kubernetes.io/rbd".
func (p *Plugin) GetInTreePluginName() string { return PluginName }

// GetCSIPluginName returns the CSI driver name: Options.DriverName, by
// default DriverName.
func (p *Plugin) GetCSIPluginName() string { return cmp.Or(p.opts.DriverName, DriverName) }

// CanSupport reports whether pv has an RBD source.
func (p *Plugin) CanSupport(pv *v1.PersistentVolume) bool {
	return pv != nil && pv.Spec.RBD != nil
}

// CanSupportInline reports whether vol has an RBD source.
func (p *Plugin) CanSupportInline(vol *v1.Volume) bool {
	return vol != nil && vol.RBD != nil
}

// RepairVolumeHandle returns the handle unchanged: RBD handles do not depend
// on the node.
func (p *Plugin) RepairVolumeHandle(volumeHandle, _ string) (string, error) {
	return volumeHandle, nil
}

func validateSource(fp *field.Path, mons []string, image string) field.ErrorList {
	var errs field.ErrorList
	if len(mons) == 0 {
		errs = append(errs, field.Required(fp.Child("monitors"), "at least one Ceph monitor (host:port) is required"))
	}
	if image == "" {
		errs = append(errs, field.Required(fp.Child("image"), "the RBD image name is required"))
	}
	return errs
}

func accessModeFor(readOnly bool) []v1.PersistentVolumeAccessMode {
	if readOnly {
		return []v1.PersistentVolumeAccessMode{v1.ReadOnlyMany}
	}
	return []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
}

// Access mode lists of a translated PV (read only).
var (
	modesReadOnly  = []v1.PersistentVolumeAccessMode{v1.ReadOnlyMany}
	modesReadWrite = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
)

// forwardOf gives what the forward translation of pv, which has a valid RBD
// source, sets in the CSI source and access modes, and its volume
// attributes, appended to attrs. (They are returned apart, so that attrs can
// stay on the caller's stack while the strings of the result escape.) handle
// and clusterID are the source's migration handle and its clusterID when the
// caller has them, else both "" and computed here; a PV annotated with
// AnnVolumeHandle uses neither.
func (p *Plugin) forwardOf(pv *v1.PersistentVolume, handle, clusterID string, attrs []overrides.Attribute) (overrides.Forwarded, []overrides.Attribute) {
	src := pv.Spec.RBD
	f := overrides.Forwarded{FSType: src.FSType, ReadOnly: src.ReadOnly, AccessModes: modesReadWrite}
	if src.ReadOnly {
		f.AccessModes = modesReadOnly
	}
	a := attrs
	if annotated := pv.Annotations[AnnVolumeHandle]; annotated != "" {
		f.VolumeHandle = annotated
		a = append(a, overrides.Attribute{Key: attrClusterID, Value: pv.Annotations[AnnClusterID]})
	} else {
		if clusterID == "" {
			h, _ := volumeid.NewRBDHandle(src.CephMonitors, src.RBDPool, src.RBDImage)
			handle, clusterID = h.String(), h.ClusterID
		}
		f.VolumeHandle = handle
		a = append(a, overrides.Attribute{Key: attrClusterID, Value: clusterID}, overrides.Attribute{Key: attrStaticVolume, Value: "true"})
	}
	features := pv.Annotations[AnnImageFeatures]
	if features == "" {
		features = defaultImageFeatures
	}
	a = append(a,
		overrides.Attribute{Key: attrImageName, Value: src.RBDImage},
		overrides.Attribute{Key: attrPool, Value: src.RBDPool},
		overrides.Attribute{Key: attrImageFeatures, Value: features},
		overrides.Attribute{Key: attrImageFormat, Value: pv.Annotations[AnnImageFormat]},
		overrides.Attribute{Key: attrJournalPool, Value: pv.Annotations[AnnJournalPool]},
		overrides.Attribute{Key: attrMigration, Value: "true"},
		overrides.Attribute{Key: attrTryOtherMounters, Value: "true"})
	if ref, _ := cephpv.InTreeSecretRef(src.SecretRef, cephpv.ClaimNamespace(pv), nil); ref != nil {
		f = f.WithRef(secrets.NodeStage, ref)
		f = f.WithRef(secrets.ControllerExpand, ref)
		if !p.opts.DisableNodeExpandSecret {
			f = f.WithRef(secrets.NodeExpand, ref)
		}
	}
	return f, a
}

// forwardBlock holds a translated PV with the pieces it points to.
type forwardBlock struct {
	pv   pvcopy.Buffer
	csi  v1.CSIPersistentVolumeSource
	refs [3]v1.SecretReference
}

// TranslateInTreePVToCSI translates a PV with spec.rbd to one with spec.csi
// for rbd.csi.ceph.com. pv is not modified.
func (p *Plugin) TranslateInTreePVToCSI(logger klog.Logger, pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	if err := validInTreePV(pv); err != nil {
		return nil, err
	}
	src := pv.Spec.RBD
	handle, clusterID := composedHandle(logger, pv)
	var rec overrides.Recorded
	if err := rec.Read(pv); err != nil {
		return nil, err
	}
	var attrs [9]overrides.Attribute
	f, a := p.forwardOf(pv, handle, clusterID, attrs[:0])
	// The monitors and the user are carried for the reverse translation,
	// unless the attributes recorded for a volume Ceph CSI provisioned
	// already give them back (as the reverse translation reads them): then
	// the copy's annotations stay within a small map.
	mons, hasMons := rec.Attribute(attrMonitors)
	carryMons := !hasMons || !annot.SplitsTo(mons, src.CephMonitors)
	adminID, hasAdminID := rec.Attribute(attrAdminID)
	carryUser := !hasAdminID || src.RadosUser == "" || adminID != src.RadosUser
	stage := f.Ref(secrets.NodeStage)
	carryRef := src.SecretRef != nil && (stage == nil || *stage != *src.SecretRef)
	extra := 0
	for _, carried := range []bool{carryMons, carryUser, src.Keyring != "", carryRef} {
		if carried {
			extra++
		}
	}
	if rec.Present() {
		extra-- // removed from the copy before anything is added
	}
	// One allocation for the PV and the parts of it this function builds.
	blk := new(forwardBlock)
	out := pvcopy.Into(&blk.pv, pv, extra)
	rec.RemoveFrom(out)
	csi := &blk.csi
	*csi = v1.CSIPersistentVolumeSource{
		Driver:       p.GetCSIPluginName(),
		VolumeHandle: f.VolumeHandle,
		FSType:       f.FSType,
		ReadOnly:     f.ReadOnly,
	}
	if stage != nil {
		refs := &blk.refs
		for i := range refs {
			refs[i] = *stage
		}
		csi.NodeStageSecretRef = &refs[0]
		csi.ControllerExpandSecretRef = &refs[1]
		if f.Ref(secrets.NodeExpand) != nil {
			csi.NodeExpandSecretRef = &refs[2]
		}
	}
	out.Spec.CSI = csi
	annot.SetAccessModes(out, pv.Spec.AccessModes, blk.pv.AccessMode(f.AccessModes[0]))
	if carryMons {
		annot.Set(out, AnnMonitors, annot.EncodeList(src.CephMonitors))
	}
	if carryUser {
		annot.Set(out, AnnUser, src.RadosUser)
	}
	if src.Keyring != "" {
		annot.Set(out, AnnKeyring, src.Keyring)
	}
	if carryRef {
		b, _ := json.Marshal(src.SecretRef)
		annot.Set(out, AnnSecretRef, string(b))
	}
	if err := rec.Forward(out, a); err != nil {
		return nil, err
	}
	overrides.KeepStockHandle(out, f.VolumeHandle)
	return out, nil
}

// reverseBlock holds a PV translated back with the pieces it points to.
type reverseBlock struct {
	pv  pvcopy.Buffer
	rbd v1.RBDPersistentVolumeSource
	ref v1.SecretReference
}

// validInTreePV checks what the forward translation reads of pv's RBD
// source: monitors, an image, and a namespace for its secret reference.
func validInTreePV(pv *v1.PersistentVolume) error {
	if pv == nil || pv.Spec.RBD == nil {
		return check.InTreePV(pv, "rbd", "an RBD volume source")
	}
	src := pv.Spec.RBD
	if len(src.CephMonitors) == 0 || src.RBDImage == "" {
		return plugin.Invalid("PersistentVolume", pv.Name, validateSource(field.NewPath("spec", "rbd"), src.CephMonitors, src.RBDImage)...)
	}
	if src.SecretRef != nil && src.SecretRef.Namespace == "" {
		if _, ferr := cephpv.InTreeSecretRef(src.SecretRef, cephpv.ClaimNamespace(pv), field.NewPath("spec", "rbd", "secretRef")); ferr != nil {
			return plugin.Invalid("PersistentVolume", pv.Name, ferr)
		}
	}
	return nil
}

// composedHandle is the migration handle, and its clusterID, that the
// forward translation composes for pv's image ("" when pv is annotated
// with the handle to keep). It logs a handle Ceph CSI resolves to another
// image.
func composedHandle(logger klog.Logger, pv *v1.PersistentVolume) (handle, clusterID string) {
	if pv.Annotations[AnnVolumeHandle] != "" {
		return "", ""
	}
	src := pv.Spec.RBD
	h, hazard := volumeid.NewRBDHandle(src.CephMonitors, src.RBDPool, src.RBDImage)
	handle = h.String()
	if hazard != nil {
		logger.Info("Migrated RBD volume has a handle that Ceph CSI resolves to another image; keep its reclaim policy Retain",
			"pv", pv.Name, "image", src.RBDImage, "pool", src.RBDPool, "handle", handle)
	}
	return handle, h.ClusterID
}

// TranslateCSIPVToInTree translates a PV of rbd.csi.ceph.com back to
// spec.rbd. pv is not modified.
func (p *Plugin) TranslateCSIPVToInTree(pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	c, err := check.CSISource(pv, p.GetCSIPluginName())
	if err != nil {
		return nil, err
	}
	attrs := c.VolumeAttributes
	image, pool, clusterID := imageOf(c)
	if image == "" {
		return nil, plugin.Invalid("PersistentVolume", pv.Name, field.Required(field.NewPath("spec", "csi", "volumeAttributes").Key(attrImageName),
			"the RBD image name is needed: set the imageName attribute, or use a migration handle"))
	}
	blk := new(reverseBlock)
	out := pvcopy.Into(&blk.pv, pv, 6)
	carried, carriedOK := annot.Take(out, AnnMonitors)
	mons, err := cephpv.VolumeMonitors(p.opts.ClusterConfig, cephpv.VolumeSources{Carried: carried, HasCarried: carriedOK, Attributes: attrs, ClusterID: clusterID})
	if err != nil {
		return nil, check.MissingMonitors(pv.Name, "spec.rbd.monitors", err)
	}
	user, ok := annot.Take(out, AnnUser)
	if !ok {
		user = attrs[attrAdminID]
		if user == "" {
			user = defaultUser
		}
	}
	keyring, _ := annot.Take(out, AnnKeyring)
	blk.rbd = v1.RBDPersistentVolumeSource{
		CephMonitors: mons,
		RBDImage:     image,
		FSType:       c.FSType,
		RBDPool:      pool,
		RadosUser:    user,
		Keyring:      keyring,
		ReadOnly:     c.ReadOnly,
	}
	if raw, ok := annot.Take(out, AnnSecretRef); ok {
		if err := json.Unmarshal([]byte(raw), &blk.ref); err != nil {
			return nil, plugin.Invalid("PersistentVolume", pv.Name, field.Invalid(field.NewPath("metadata", "annotations").Key(AnnSecretRef), raw,
				`must be the JSON of a SecretReference, {"name": ..., "namespace": ...}: `+err.Error()))
		}
		blk.rbd.SecretRef = &blk.ref
	} else if c.NodeStageSecretRef != nil {
		blk.ref = *c.NodeStageSecretRef
		blk.rbd.SecretRef = &blk.ref
	}
	out.Spec.RBD = &blk.rbd
	if err := annot.RestoreAccessModes(out); err != nil {
		return nil, plugin.Invalid("PersistentVolume", pv.Name, field.Invalid(
			field.NewPath("metadata", "annotations").Key(plugin.AnnAccessModes), out.Annotations[plugin.AnnAccessModes], err.Error()))
	}
	fwdHandle, fwdClusterID := recordHandle(out, c, mons, pool, image)
	var fattrs [9]overrides.Attribute
	f, fa := p.forwardOf(out, fwdHandle, fwdClusterID, fattrs[:0])
	f.Attributes = fa
	if err := overrides.Record(out, pv, &f); err != nil {
		return nil, err
	}
	return out, nil
}

// imageOf is the image, pool and clusterID of a CSI source: its
// attributes, and what they lack, a migration handle may name.
func imageOf(c *v1.CSIPersistentVolumeSource) (image, pool, clusterID string) {
	attrs := c.VolumeAttributes
	image = attrs[attrImageName]
	pool, hasPool := attrs[attrPool]
	clusterID = attrs[attrClusterID]
	if image == "" || !hasPool || clusterID == "" {
		if parsed, err := volumeid.ParseRBDHandle(c.VolumeHandle); err == nil {
			if image == "" {
				image = parsed.Image
			}
			if !hasPool {
				pool = parsed.Pool
			}
			if clusterID == "" {
				clusterID = parsed.ClusterID
			}
		}
	}
	return image, pool, clusterID
}

// recordHandle records in out, the reverse translation of c, a handle a
// forward translation would not compose (a volume Ceph CSI provisioned, or
// a handle annotated before) as upstream records it, so that components on
// csi-translation-lib agree; the forward translation of out then gives
// c.VolumeHandle either way. It returns the handle and clusterID the
// forward translation composes, when known.
func recordHandle(out *v1.PersistentVolume, c *v1.CSIPersistentVolumeSource, mons []string, pool, image string) (handle, clusterID string) {
	ann := out.Annotations[AnnVolumeHandle]
	if ann == c.VolumeHandle {
		return "", ""
	}
	// Every composed handle starts "mig_mons-"; others (a Ceph CSI volume
	// ID) differ without composing.
	var h volumeid.RBDHandle
	var buf [256]byte
	if ann == "" && strings.HasPrefix(c.VolumeHandle, "mig_mons-") {
		h, _ = volumeid.NewRBDHandle(mons, pool, image)
	}
	if h.ClusterID != "" && string(h.AppendTo(buf[:0])) == c.VolumeHandle {
		return c.VolumeHandle, h.ClusterID
	}
	attrs := c.VolumeAttributes
	annot.Set(out, AnnVolumeHandle, c.VolumeHandle)
	annot.Set(out, AnnClusterID, attrs[attrClusterID])
	annot.Set(out, AnnJournalPool, attrs[attrJournalPool])
	annot.Set(out, AnnImageFeatures, attrs[attrImageFeatures])
	annot.Set(out, AnnImageFormat, attrs[attrImageFormat])
	return "", ""
}

// TranslateInTreeInlineVolumeToCSI translates a pod's inline rbd volume to a
// PV for rbd.csi.ceph.com that Ceph CSI stages as a static volume: the handle
// is the image name, as upstream. A secret reference gets the pod's
// namespace; one with an empty name is no secret, as in-tree.
func (p *Plugin) TranslateInTreeInlineVolumeToCSI(_ klog.Logger, vol *v1.Volume, podNamespace string) (*v1.PersistentVolume, error) {
	if vol == nil || vol.RBD == nil {
		return nil, plugin.Invalid("Volume", "", field.Required(field.NewPath("rbd"), "an inline RBD volume source is required"))
	}
	src := vol.RBD
	fp := field.NewPath("volumes").Key(vol.Name).Child("rbd")
	errs := validateSource(fp, src.CephMonitors, src.RBDImage)
	if src.SecretRef != nil && src.SecretRef.Name != "" && podNamespace == "" {
		errs = append(errs, field.Required(field.NewPath("podNamespace"), "the pod's namespace is needed for the secret reference of an inline volume"))
	}
	if len(errs) > 0 {
		return nil, plugin.Invalid("Volume", vol.Name, errs...)
	}
	pool := src.RBDPool
	if pool == "" {
		pool = volumeid.RBDDefaultPool
	}
	csi := &v1.CSIPersistentVolumeSource{
		Driver:       p.GetCSIPluginName(),
		VolumeHandle: src.RBDImage,
		FSType:       src.FSType,
		ReadOnly:     src.ReadOnly,
		VolumeAttributes: map[string]string{
			attrClusterID:     volumeid.ClusterIDFromList(src.CephMonitors),
			attrPool:          pool,
			attrStaticVolume:  "true",
			attrImageFeatures: defaultImageFeatures,
			attrImageName:     src.RBDImage,
		},
	}
	if src.SecretRef != nil && src.SecretRef.Name != "" {
		csi.NodeStageSecretRef = &v1.SecretReference{Name: src.SecretRef.Name, Namespace: podNamespace}
		csi.ControllerExpandSecretRef = &v1.SecretReference{Name: src.SecretRef.Name, Namespace: podNamespace}
	}
	fs := v1.PersistentVolumeFilesystem
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: p.GetCSIPluginName() + "-" + src.RBDImage},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: csi},
			AccessModes:            accessModeFor(src.ReadOnly),
			VolumeMode:             &fs,
		},
	}, nil
}

// The in-tree StorageClass parameters, one index each into scParams.
const (
	scAdminID = iota
	scAdminSecretName
	scAdminSecretNamespace
	scFSType
	scImageFormat
	scImageFeatures
	scKeyring
	scMonitors
	scPool
	scUserID
	scUserSecretName
	scUserSecretNamespace
	scCount
)

// scParam is one parameter of an in-tree RBD StorageClass and what Ceph CSI
// gets of it: a new parameter is one row here (its index above), and the
// match, the checks and the translation read it from this table.
type scParam struct {
	// key is the key, lower-cased (keys are matched case-insensitively).
	key string
	// csi is the Ceph CSI class parameter its value becomes; "" when it
	// becomes none of its own (the admin secret's name and namespace fill
	// secretKinds' slots; a dropped one none).
	csi string
	// dropped: Ceph CSI has no counterpart; the key is logged and recorded
	// in AnnDroppedParameters.
	dropped bool
	// allowed are the values accepted, when not any.
	allowed []string
}

// scParams are the in-tree RBD provisioner's parameters. monitors also gives
// the clusterID (their MD5), and pool has a default (RBDDefaultPool).
var scParams = [scCount]scParam{
	scAdminID:              {key: "adminid", csi: attrAdminID},
	scAdminSecretName:      {key: "adminsecretname"},
	scAdminSecretNamespace: {key: "adminsecretnamespace"},
	scFSType:               {key: "fstype", csi: secrets.Prefix + "fstype"},
	scImageFormat:          {key: "imageformat", csi: attrImageFormat, allowed: []string{"1", "2"}},
	scImageFeatures:        {key: "imagefeatures", csi: attrImageFeatures},
	scKeyring:              {key: "keyring", dropped: true},
	scMonitors:             {key: "monitors", csi: attrMonitors},
	scPool:                 {key: "pool", csi: attrPool},
	scUserID:               {key: "userid", dropped: true},
	scUserSecretName:       {key: "usersecretname", dropped: true},
	scUserSecretNamespace:  {key: "usersecretnamespace", dropped: true},
}

// scKeys are scParams' keys, as scparams.Match takes them.
var scKeys = func() (keys [scCount]string) {
	for i, p := range scParams {
		keys[i] = p.key
	}
	return keys
}()

// secretKinds are the secrets a translated StorageClass names, all the admin
// secret; the node-expand one last (it is left out when disabled).
var secretKinds = []secrets.Keys{secrets.KeysOf(secrets.Provisioner), secrets.KeysOf(secrets.NodeStage),
	secrets.KeysOf(secrets.ControllerExpand), secrets.KeysOf(secrets.NodeExpand)}

// TranslateInTreeStorageClassToCSI translates a StorageClass of the in-tree
// RBD provisioner. Keys are matched case-insensitively; the ones upstream
// translates are translated as upstream does (with the admin secret also as
// the node-expand secret unless disabled); userId, userSecretName,
// userSecretNamespace and keyring, which Ceph CSI has no parameter for, are
// logged and recorded in annotation AnnDroppedParameters; unknown keys are an
// error, as they were for the in-tree provisioner. The clusterID is the MD5 of
// the exact monitors string: "a,b" and "a, b" are different clusters.
func (p *Plugin) TranslateInTreeStorageClassToCSI(logger klog.Logger, sc *storage.StorageClass) (*storage.StorageClass, error) {
	if sc == nil {
		return nil, plugin.Invalid("StorageClass", "", field.Required(field.NewPath("storageClass"), "a StorageClass is required"))
	}
	var given [len(scKeys)]scparams.Param
	dropped, errs := matchClass(&given, sc.Parameters)
	if len(errs) > 0 {
		return nil, plugin.Invalid("StorageClass", sc.Name, errs...)
	}
	kinds := len(secretKinds)
	if p.opts.DisableNodeExpandSecret {
		kinds--
	}
	shallow := *sc
	shallow.Parameters = nil
	out := shallow.DeepCopy()
	out.Provisioner = p.GetCSIPluginName()
	out.Parameters = classParams(&given, secretKinds[:kinds])
	if dropped > 0 {
		m := make(map[string]string, dropped)
		for i, g := range given {
			if scParams[i].dropped && g.Set() {
				m[g.Key] = g.Value
			}
		}
		logger.Info("In-tree RBD StorageClass parameters have no Ceph CSI counterpart and are not translated; the node-stage secret is the admin secret",
			"storageClass", sc.Name, "parameters", slices.Sorted(maps.Keys(m)))
		b, _ := json.Marshal(m)
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[AnnDroppedParameters] = string(b)
	}
	return out, nil
}

// matchClass reads an in-tree class's parameters into given and checks
// them; dropped counts those Ceph CSI has no counterpart for.
func matchClass(given *[len(scKeys)]scparams.Param, parameters map[string]string) (dropped int, errs field.ErrorList) {
	fp := func() *field.Path { return field.NewPath("parameters") }
	errs = scparams.Match(given[:], parameters, scKeys[:], fp)
	for i, g := range given {
		row := scParams[i]
		switch {
		case !g.Set():
		case row.allowed != nil && !slices.Contains(row.allowed, g.Value):
			errs = append(errs, field.NotSupported(fp().Key(g.Key), g.Value, row.allowed))
		case row.dropped:
			dropped++
		}
	}
	scparams.Sort(errs)
	if given[scMonitors].Value == "" {
		errs = append(errs, field.Required(fp().Key("monitors"), "comma-separated Ceph monitors are required"))
	}
	if given[scAdminSecretName].Value == "" {
		errs = append(errs, field.Required(fp().Key("adminSecretName"), "the name of the Ceph admin secret is required"))
	}
	return dropped, errs
}

// classParams are the Ceph CSI class parameters of the in-tree ones given,
// with the admin secret for each of kinds.
func classParams(given *[len(scKeys)]scparams.Param, kinds []secrets.Keys) map[string]string {
	// Sized exactly: a map that grows on its last insert costs a rehash.
	size := 2 + 2*len(kinds) // migration, pool; the secret names and namespaces
	for i, g := range given {
		switch {
		case !g.Set(), scParams[i].csi == "", i == scPool:
		case i == scMonitors:
			size += 2 // monitors, clusterID
		default:
			size++
		}
	}
	params := make(map[string]string, size)
	params[attrMigration] = "true"
	params[attrPool] = volumeid.RBDDefaultPool
	for i, g := range given {
		if csi := scParams[i].csi; csi != "" && g.Set() {
			params[csi] = g.Value
		}
	}
	if g := given[scMonitors]; g.Set() {
		params[attrClusterID] = volumeid.ClusterID(g.Value)
	}
	ns := defaultSecretNS
	if g := given[scAdminSecretNamespace]; g.Set() {
		ns = g.Value
	}
	for _, keys := range kinds {
		params[keys.Name] = given[scAdminSecretName].Value
		params[keys.Namespace] = ns
	}
	return params
}

// Finding codes reported by CheckPV.
const (
	FindingHandleResolvesElsewhere = "RBDHandleResolvesElsewhere"
	FindingNonAdminUser            = "RBDSecretNeedsAdminId"
	FindingNoSecret                = "RBDNoSecretRef"
	FindingInvalid                 = "RBDInvalidSource"
)

// CheckPV reports the migration hazards of an RBD PV: a handle Ceph CSI
// resolves to another image, a non-admin RADOS user (the migration secret
// must then carry adminId), no secret reference (in-tree used a keyring file
// on the node, Ceph CSI needs a Secret), missing monitors or image.
func (p *Plugin) CheckPV(pv *v1.PersistentVolume) []plugin.Finding {
	if !p.CanSupport(pv) {
		return nil
	}
	src := pv.Spec.RBD
	var out []plugin.Finding
	for _, e := range validateSource(field.NewPath("spec", "rbd"), src.CephMonitors, src.RBDImage) {
		out = append(out, plugin.Finding{Code: FindingInvalid, Severity: plugin.SeverityBlocker, Field: e.Field, Message: e.Detail,
			Remedy: "fix the PV; it cannot be translated"})
	}
	if len(out) > 0 {
		return out
	}
	var ue *volumeid.UnrepresentableError
	if _, err := volumeid.NewRBDHandle(src.CephMonitors, src.RBDPool, src.RBDImage); pv.Annotations[AnnVolumeHandle] == "" && errors.As(err, &ue) {
		out = append(out, plugin.Finding{Code: FindingHandleResolvesElsewhere, Severity: plugin.SeverityWarning, Field: "spec.rbd.image",
			Message: handleHazard(ue),
			Remedy:  "set persistentVolumeReclaimPolicy: Retain before migrating, and delete the image by hand when the volume is released; or set annotation " + AnnVolumeHandle + " to a handle Ceph CSI resolves to this image"})
	}
	ref, ferr := cephpv.InTreeSecretRef(src.SecretRef, cephpv.ClaimNamespace(pv), field.NewPath("spec", "rbd", "secretRef"))
	if ferr != nil {
		out = append(out, plugin.Finding{Code: FindingInvalid, Severity: plugin.SeverityBlocker, Field: ferr.Field, Message: ferr.Detail,
			Remedy: "bind the PV to its claim first: the in-tree plugin read the secret in the namespace of the pod using the volume, which is its claim's, and so does the translation"})
	} else if ref == nil {
		out = append(out, plugin.Finding{Code: FindingNoSecret, Severity: plugin.SeverityBlocker, Field: "spec.rbd.secretRef",
			Message: "the volume has no secret reference (in-tree read the keyring file " + keyringOrDefault(src.Keyring) + " on the node); Ceph CSI needs a Secret",
			Remedy: "create a Secret holding the user's key under \"key\" (and \"adminId\" for a non-admin user), then re-create the PV object with spec.rbd.secretRef naming it " +
				"(reclaim policy Retain first, delete the PV object, create it again with the same name and claimRef; the image is kept and the claim binds to it again)"})
	}
	if u := src.RadosUser; u != "" && u != defaultUser {
		f := plugin.Finding{Code: FindingNonAdminUser, Severity: plugin.SeverityWarning, Field: "spec.rbd.user",
			Message: "RADOS user \"" + u + "\" is not carried into the CSI request: Ceph CSI takes the user from the secret's adminId field and defaults to admin",
			Remedy:  "add adminId: " + u + " to the Secret the PV references"}
		if ferr == nil && ref != nil {
			f.Action, f.ActsOn = plugin.ActionCreateSecret, "Secret "+ref.Namespace+"/"+ref.Name
		}
		out = append(out, f)
	}
	return out
}

// handleHazard says what Ceph CSI's RBD controller does with the migration
// handle of an image whose handle does not name it, as measured against Ceph
// CSI v3.12.2 (cephtest.TestCephRBDHandleHazards).
func handleHazard(ue *volumeid.UnrepresentableError) string {
	h, read, err := ue.Handle, ue.CephCSIReads, ue.CephCSIErr
	if err != nil {
		var pe *volumeid.ParseError
		reason := err.Error()
		if errors.As(err, &pe) {
			reason = pe.Msg
		}
		return "Ceph CSI cannot parse this volume's migration handle " + strconv.Quote(h) + " (" + reason +
			"): ControllerExpandVolume fails with Internal and DeleteVolume with InvalidArgument, retried for ever; the driver never resizes or deletes the image"
	}
	return "Ceph CSI reads this volume's migration handle as image " + strconv.Quote(read.Image) + " in pool " + strconv.Quote(read.Pool) +
		", not " + strconv.Quote(ue.Want.Image) + ": expand and delete act on that image when it exists (it is resized, then deleted); " +
		"when it does not, expand fails with Internal (image not found) and delete reports success while this image stays in the pool (it leaks)"
}

func keyringOrDefault(k string) string {
	if k == "" {
		return "/etc/ceph/keyring"
	}
	return k
}

// DoesNotModifyInputs marks the plugin as plugin.NonMutating.
func (p *Plugin) DoesNotModifyInputs() {}

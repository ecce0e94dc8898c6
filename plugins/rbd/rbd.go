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
// with an error matching plugins.ErrMissingInformation otherwise. For CSI PVs
// that did not come from a forward translation it writes upstream's
// annotations (rbd.csi.ceph.com/volume-handle, clusterID, journalPool,
// imageFeatures, imageFormat) and plugins.AnnCSIOverrides, so that forward
// translation gives the CSI source back.
//
// Hazard: the handle format cannot represent an image without the
// "kubernetes-dynamic-pvc-" prefix or with "_" in its name; Ceph CSI then
// deletes or expands a different image (see volumeid.UnrepresentableError).
// The handle stays upstream's (mounts work); [Plugin.CheckPV] reports it, and
// the forward translation logs it.
package rbd

import (
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

	"github.com/csimigrate/csimigrate/plugins"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/volumeid"
)

// Names of the in-tree plugin and the CSI driver.
const (
	PluginName = "kubernetes.io/rbd"
	DriverName = "rbd.csi.ceph.com"
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
	// the encoding of plugins.EncodeList (usually comma-joined).
	AnnMonitors = "rbd.csimigrate.io/monitors"
	// AnnUser carries the in-tree RADOS user (possibly empty).
	AnnUser = "rbd.csimigrate.io/user"
	// AnnKeyring carries the in-tree keyring path when it is set.
	AnnKeyring = "rbd.csimigrate.io/keyring"
	// AnnSecretRef carries the in-tree secretRef, as the JSON of a
	// SecretReference, when the CSI references are not that reference
	// verbatim: an empty name (no secret, as in-tree), or an empty namespace
	// (the claim's, as in-tree; see ceph.InTreeSecretRef).
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
	defaultPool          = "rbd"
	defaultUser          = "admin"
	defaultSecretNS      = "default"

	csiPrefix = "csi.storage.k8s.io/"
)

// Options configure the plugin. The zero value is upstream-compatible with
// the node-expand secret on.
type Options struct {
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
	_ plugins.InTreePlugin = (*Plugin)(nil)
	_ plugins.Checker      = (*Plugin)(nil)
)

// New returns an RBD translator.
func New(opts Options) *Plugin {
	return &Plugin{opts: opts}
}

// GetInTreePluginName returns "kubernetes.io/rbd".
func (p *Plugin) GetInTreePluginName() string { return PluginName }

// GetCSIPluginName returns "rbd.csi.ceph.com".
func (p *Plugin) GetCSIPluginName() string { return DriverName }

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

// handleOK reports, without allocating, whether Ceph CSI reads the handle
// composed for (pool, image) back as the same image and pool; it agrees with
// volumeid.CephCSIReadRBDHandle for handles with an MD5 clusterID.
func handleOK(pool, image string) bool {
	// The bare prefix is fine: Ceph CSI adds the prefix to an empty name.
	rest, ok := strings.CutPrefix(image, volumeid.RBDImagePrefix)
	return ok && pool != "" &&
		strings.IndexByte(rest, '_') < 0 && !strings.Contains(rest, "image-")
}

// Access mode lists of a translated PV (read only).
var (
	modesReadOnly  = []v1.PersistentVolumeAccessMode{v1.ReadOnlyMany}
	modesReadWrite = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
)

// describe gives what the forward translation of pv, which has a valid RBD
// source, sets in the CSI source and access modes, with the attributes
// written to attrs (their number is returned; the caller sets f.Attributes,
// so that f itself does not point to attrs and attrs can stay on the stack).
// joined is the monitors joined with ","; handle is the migration handle of
// the source when the caller has it, else "".
func (p *Plugin) describe(pv *v1.PersistentVolume, attrs *[9]plugins.Attribute, joined, handle string) (plugins.Forwarded, int) {
	src := pv.Spec.RBD
	f := plugins.Forwarded{FSType: src.FSType, ReadOnly: src.ReadOnly, AccessModes: modesReadWrite}
	if src.ReadOnly {
		f.AccessModes = modesReadOnly
	}
	a := attrs[:0]
	if h := pv.Annotations[AnnVolumeHandle]; h != "" {
		f.VolumeHandle = h
		a = append(a, plugins.Attribute{Key: attrClusterID, Value: pv.Annotations[AnnClusterID]})
	} else {
		if handle == "" {
			handle = volumeid.RBDHandleFor(joined, src.RBDPool, src.RBDImage)
		}
		f.VolumeHandle = handle
		// The clusterID is the 32 digits after "mig_mons-" in the handle.
		a = append(a, plugins.Attribute{Key: attrClusterID, Value: handle[9:41]}, plugins.Attribute{Key: attrStaticVolume, Value: "true"})
	}
	features := pv.Annotations[AnnImageFeatures]
	if features == "" {
		features = defaultImageFeatures
	}
	a = append(a,
		plugins.Attribute{Key: attrImageName, Value: src.RBDImage},
		plugins.Attribute{Key: attrPool, Value: src.RBDPool},
		plugins.Attribute{Key: attrImageFeatures, Value: features},
		plugins.Attribute{Key: attrImageFormat, Value: pv.Annotations[AnnImageFormat]},
		plugins.Attribute{Key: attrJournalPool, Value: pv.Annotations[AnnJournalPool]},
		plugins.Attribute{Key: attrMigration, Value: "true"},
		plugins.Attribute{Key: attrTryOtherMounters, Value: "true"})
	if ref, _ := ceph.InTreeSecretRef(src.SecretRef, ceph.ClaimNamespace(pv), nil); ref != nil {
		f.NodeStage, f.ControllerExpand = ref, ref
		if !p.opts.DisableNodeExpandSecret {
			f.NodeExpand = ref
		}
	}
	return f, len(a)
}

// forwardBlock holds a translated PV with the pieces it points to.
type forwardBlock struct {
	pv   plugins.PVBuffer
	csi  v1.CSIPersistentVolumeSource
	refs [3]v1.SecretReference
}

// TranslateInTreePVToCSI translates a PV with spec.rbd to one with spec.csi
// for rbd.csi.ceph.com. pv is not modified.
func (p *Plugin) TranslateInTreePVToCSI(logger klog.Logger, pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	if pv == nil || pv.Spec.RBD == nil {
		return nil, plugins.Invalid("PersistentVolume", plugins.PVName(pv),
			field.Required(field.NewPath("spec", "rbd"), "an RBD volume source is required"))
	}
	src := pv.Spec.RBD
	if len(src.CephMonitors) == 0 || src.RBDImage == "" {
		return nil, plugins.Invalid("PersistentVolume", pv.Name, validateSource(field.NewPath("spec", "rbd"), src.CephMonitors, src.RBDImage)...)
	}
	if src.SecretRef != nil && src.SecretRef.Namespace == "" {
		if _, ferr := ceph.InTreeSecretRef(src.SecretRef, ceph.ClaimNamespace(pv), field.NewPath("spec", "rbd", "secretRef")); ferr != nil {
			return nil, plugins.Invalid("PersistentVolume", pv.Name, ferr)
		}
	}
	// The joined monitors, the handle and the monitors annotation are built
	// in one buffer and converted once.
	var buf [512]byte
	b := buf[:0]
	for i, m := range src.CephMonitors {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	j := len(b)
	carried := pv.Annotations[AnnVolumeHandle] != ""
	if !carried {
		b = volumeid.AppendRBDHandleBytes(b, b[:j], src.RBDPool, src.RBDImage)
	}
	h := len(b)
	plain := plugins.PlainList(src.CephMonitors)
	if !plain {
		b = plugins.AppendEncodedList(b, src.CephMonitors)
	}
	text := string(b)
	joined, handle, monitors := text[:j], text[j:h], text[:j]
	if !plain {
		monitors = text[h:]
	}
	var attrs [9]plugins.Attribute
	f, n := p.describe(pv, &attrs, joined, handle)
	if pv.Annotations[AnnVolumeHandle] == "" && !handleOK(src.RBDPool, src.RBDImage) {
		logger.Info("Migrated RBD volume has a handle that Ceph CSI resolves to another image; keep its reclaim policy Retain",
			"pv", pv.Name, "image", src.RBDImage, "pool", src.RBDPool, "handle", f.VolumeHandle)
	}
	// One allocation for the PV and the parts of it this function builds.
	blk := new(forwardBlock)
	extra := 2 // monitors, user
	if src.Keyring != "" {
		extra++
	}
	out := plugins.CopyPVInto(&blk.pv, pv, extra)
	csi := &blk.csi
	*csi = v1.CSIPersistentVolumeSource{
		Driver:       DriverName,
		VolumeHandle: f.VolumeHandle,
		FSType:       f.FSType,
		ReadOnly:     f.ReadOnly,
	}
	if f.NodeStage != nil {
		refs := &blk.refs
		for i := range refs {
			refs[i] = *f.NodeStage
		}
		csi.NodeStageSecretRef = &refs[0]
		csi.ControllerExpandSecretRef = &refs[1]
		if f.NodeExpand != nil {
			csi.NodeExpandSecretRef = &refs[2]
		}
	}
	out.Spec.CSI = csi
	plugins.SetAccessModes(out, pv.Spec.AccessModes, blk.pv.AccessMode(f.AccessModes[0]))
	plugins.SetAnnotation(out, AnnMonitors, monitors)
	plugins.SetAnnotation(out, AnnUser, src.RadosUser)
	if src.Keyring != "" {
		plugins.SetAnnotation(out, AnnKeyring, src.Keyring)
	}
	if r := src.SecretRef; r != nil && (f.NodeStage == nil || *f.NodeStage != *r) {
		b, _ := json.Marshal(r)
		plugins.SetAnnotation(out, AnnSecretRef, string(b))
	}
	if err := plugins.FinishForward(out, attrs[:n]); err != nil {
		return nil, err
	}
	plugins.KeepStockHandle(out, f.VolumeHandle)
	return out, nil
}

// reverseBlock holds a PV translated back with the pieces it points to.
type reverseBlock struct {
	pv  plugins.PVBuffer
	rbd v1.RBDPersistentVolumeSource
	ref v1.SecretReference
}

func csiPath() *field.Path { return field.NewPath("spec", "csi") }

// TranslateCSIPVToInTree translates a PV of rbd.csi.ceph.com back to
// spec.rbd. pv is not modified.
func (p *Plugin) TranslateCSIPVToInTree(pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	if pv == nil || pv.Spec.CSI == nil {
		return nil, plugins.Invalid("PersistentVolume", plugins.PVName(pv), field.Required(csiPath(), "a CSI volume source is required"))
	}
	c := pv.Spec.CSI
	if c.Driver != DriverName {
		return nil, plugins.Invalid("PersistentVolume", pv.Name, field.NotSupported(csiPath().Child("driver"), c.Driver, []string{DriverName}))
	}
	attrs := c.VolumeAttributes
	image := attrs[attrImageName]
	pool, hasPool := attrs[attrPool]
	clusterID := attrs[attrClusterID]
	if image == "" || !hasPool || clusterID == "" {
		// What the attributes lack, a migration handle may name.
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
	if image == "" {
		return nil, plugins.Invalid("PersistentVolume", pv.Name, field.Required(csiPath().Child("volumeAttributes").Key(attrImageName),
			"the RBD image name is needed: set the imageName attribute, or use a migration handle"))
	}
	blk := new(reverseBlock)
	out := plugins.CopyPVInto(&blk.pv, pv, 6)
	carried, carriedOK := plugins.TakeAnnotation(out, AnnMonitors)
	mons, joined, _, err := ceph.ResolveMonitors(pv.Name, carried, carriedOK, attrs, clusterID, p.opts.ClusterConfig, "spec.rbd.monitors")
	if err != nil {
		return nil, err
	}
	user, ok := plugins.TakeAnnotation(out, AnnUser)
	if !ok {
		user = attrs[attrAdminID]
		if user == "" {
			user = defaultUser
		}
	}
	keyring, _ := plugins.TakeAnnotation(out, AnnKeyring)
	blk.rbd = v1.RBDPersistentVolumeSource{
		CephMonitors: mons,
		RBDImage:     image,
		FSType:       c.FSType,
		RBDPool:      pool,
		RadosUser:    user,
		Keyring:      keyring,
		ReadOnly:     c.ReadOnly,
	}
	if raw, ok := plugins.TakeAnnotation(out, AnnSecretRef); ok {
		if err := json.Unmarshal([]byte(raw), &blk.ref); err != nil {
			return nil, plugins.Invalid("PersistentVolume", pv.Name, field.Invalid(field.NewPath("metadata", "annotations").Key(AnnSecretRef), raw,
				`must be the JSON of a SecretReference, {"name": ..., "namespace": ...}: `+err.Error()))
		}
		blk.rbd.SecretRef = &blk.ref
	} else if c.NodeStageSecretRef != nil {
		blk.ref = *c.NodeStageSecretRef
		blk.rbd.SecretRef = &blk.ref
	}
	out.Spec.RBD = &blk.rbd
	if err := plugins.RestoreAccessModes(out); err != nil {
		return nil, plugins.Invalid("PersistentVolume", pv.Name, field.Invalid(
			field.NewPath("metadata", "annotations").Key(plugins.AnnAccessModes), out.Annotations[plugins.AnnAccessModes], err.Error()))
	}
	// A handle a forward translation would not compose (a volume Ceph CSI
	// provisioned, or a handle annotated before) is recorded as upstream
	// records it, so that components on csi-translation-lib agree. The
	// forward translation of the result then gives c.VolumeHandle either way.
	if h := out.Annotations[AnnVolumeHandle]; h != c.VolumeHandle {
		var buf [256]byte
		// Every composed handle starts "mig_mons-"; others (a Ceph CSI volume
		// ID) differ without composing.
		if h != "" || !strings.HasPrefix(c.VolumeHandle, "mig_mons-") ||
			string(volumeid.AppendRBDHandle(buf[:0], joined, pool, image)) != c.VolumeHandle {
			plugins.SetAnnotation(out, AnnVolumeHandle, c.VolumeHandle)
			plugins.SetAnnotation(out, AnnClusterID, attrs[attrClusterID])
			plugins.SetAnnotation(out, AnnJournalPool, attrs[attrJournalPool])
			plugins.SetAnnotation(out, AnnImageFeatures, attrs[attrImageFeatures])
			plugins.SetAnnotation(out, AnnImageFormat, attrs[attrImageFormat])
		}
	}
	handle := ""
	if out.Annotations[AnnVolumeHandle] == "" {
		handle = c.VolumeHandle
	}
	var fattrs [9]plugins.Attribute
	f, n := p.describe(out, &fattrs, joined, handle)
	f.Attributes = fattrs[:n]
	if err := plugins.FinishReverseFrom(out, pv, &f); err != nil {
		return nil, err
	}
	return out, nil
}

// TranslateInTreeInlineVolumeToCSI translates a pod's inline rbd volume to a
// PV for rbd.csi.ceph.com that Ceph CSI stages as a static volume: the handle
// is the image name, as upstream. A secret reference gets the pod's
// namespace; one with an empty name is no secret, as in-tree.
func (p *Plugin) TranslateInTreeInlineVolumeToCSI(_ klog.Logger, vol *v1.Volume, podNamespace string) (*v1.PersistentVolume, error) {
	if vol == nil || vol.RBD == nil {
		return nil, plugins.Invalid("Volume", "", field.Required(field.NewPath("rbd"), "an inline RBD volume source is required"))
	}
	src := vol.RBD
	fp := field.NewPath("volumes").Key(vol.Name).Child("rbd")
	errs := validateSource(fp, src.CephMonitors, src.RBDImage)
	if src.SecretRef != nil && src.SecretRef.Name != "" && podNamespace == "" {
		errs = append(errs, field.Required(field.NewPath("podNamespace"), "the pod's namespace is needed for the secret reference of an inline volume"))
	}
	if len(errs) > 0 {
		return nil, plugins.Invalid("Volume", vol.Name, errs...)
	}
	pool := src.RBDPool
	if pool == "" {
		pool = defaultPool
	}
	csi := &v1.CSIPersistentVolumeSource{
		Driver:       DriverName,
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
		ObjectMeta: metav1.ObjectMeta{Name: DriverName + "-" + src.RBDImage},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: csi},
			AccessModes:            accessModeFor(src.ReadOnly),
			VolumeMode:             &fs,
		},
	}, nil
}

// In-tree StorageClass parameters, lower-cased, in the order of the sc*
// constants.
var scKeys = [...]string{"adminid", "adminsecretname", "adminsecretnamespace", "fstype", "imageformat", "imagefeatures",
	"keyring", "monitors", "pool", "userid", "usersecretname", "usersecretnamespace"}

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
)

// scKey returns the index in scKeys of a parameter key matched
// case-insensitively, or -1.
func scKey(k string) int {
	for i, known := range scKeys {
		if len(k) == len(known) && strings.EqualFold(k, known) {
			return i
		}
	}
	return -1
}

// Secret parameter names of the translated StorageClass, by kind.
var (
	secretNameKeys = [...]string{csiPrefix + "provisioner-secret-name", csiPrefix + "node-stage-secret-name",
		csiPrefix + "controller-expand-secret-name", csiPrefix + "node-expand-secret-name"}
	secretNamespaceKeys = [...]string{csiPrefix + "provisioner-secret-namespace", csiPrefix + "node-stage-secret-namespace",
		csiPrefix + "controller-expand-secret-namespace", csiPrefix + "node-expand-secret-namespace"}
)

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
		return nil, plugins.Invalid("StorageClass", "", field.Required(field.NewPath("storageClass"), "a StorageClass is required"))
	}
	fp := func() *field.Path { return field.NewPath("parameters") }
	// The value and original key of each known parameter.
	var vals, keys [len(scKeys)]string
	var seen [len(scKeys)]bool
	var errs field.ErrorList
	// Keys equal but for case: each is an error against the first of them
	// in sorted order, which keys holds.
	type dup struct {
		i   int
		key string
	}
	var dups []dup
	dropped := 0
	for k, v := range sc.Parameters {
		i := scKey(k)
		switch {
		case i < 0:
			errs = append(errs, field.NotSupported(fp().Key(k), k, scKeys[:]))
			continue
		case seen[i]:
			if k < keys[i] {
				dups = append(dups, dup{i, keys[i]})
				keys[i] = k
			} else {
				dups = append(dups, dup{i, k})
			}
			continue
		}
		seen[i], vals[i], keys[i] = true, v, k
		switch i {
		case scImageFormat:
			if v != "1" && v != "2" {
				errs = append(errs, field.NotSupported(fp().Key(k), v, []string{"1", "2"}))
			}
		case scUserID, scUserSecretName, scUserSecretNamespace, scKeyring:
			dropped++
		}
	}
	for _, d := range dups {
		errs = append(errs, field.Duplicate(fp().Key(d.key), "same key as "+keys[d.i]+" (keys are case-insensitive)"))
	}
	plugins.SortErrors(errs)
	if vals[scMonitors] == "" {
		errs = append(errs, field.Required(fp().Key("monitors"), "comma-separated Ceph monitors are required"))
	}
	if vals[scAdminSecretName] == "" {
		errs = append(errs, field.Required(fp().Key("adminSecretName"), "the name of the Ceph admin secret is required"))
	}
	if len(errs) > 0 {
		return nil, plugins.Invalid("StorageClass", sc.Name, errs...)
	}
	kinds := len(secretNameKeys)
	if p.opts.DisableNodeExpandSecret {
		kinds--
	}
	// Sized exactly: a map that grows on its last insert costs a rehash.
	size := 2 + 2*kinds // migration, pool; the secret names and namespaces
	for i, ok := range seen {
		switch {
		case !ok:
		case i == scMonitors:
			size += 2 // monitors, clusterID
		case i == scFSType, i == scImageFeatures, i == scImageFormat, i == scAdminID:
			size++
		}
	}
	params := make(map[string]string, size)
	params[attrMigration] = "true"
	params[attrPool] = defaultPool
	for i, v := range vals {
		if !seen[i] {
			continue
		}
		switch i {
		case scFSType:
			params[csiPrefix+"fstype"] = v
		case scImageFeatures:
			params[attrImageFeatures] = v
		case scPool:
			params[attrPool] = v
		case scImageFormat:
			params[attrImageFormat] = v
		case scAdminID:
			params[attrAdminID] = v
		case scMonitors:
			params[attrMonitors] = v
			params[attrClusterID] = volumeid.ClusterID(v)
		}
	}
	ns := defaultSecretNS
	if seen[scAdminSecretNamespace] {
		ns = vals[scAdminSecretNamespace]
	}
	for _, key := range secretNameKeys[:kinds] {
		params[key] = vals[scAdminSecretName]
	}
	for _, key := range secretNamespaceKeys[:kinds] {
		params[key] = ns
	}
	shallow := *sc
	shallow.Parameters = nil
	out := shallow.DeepCopy()
	out.Provisioner = DriverName
	out.Parameters = params
	if dropped > 0 {
		m := make(map[string]string, dropped)
		for _, i := range [...]int{scUserID, scUserSecretName, scUserSecretNamespace, scKeyring} {
			if seen[i] {
				m[keys[i]] = vals[i]
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
func (p *Plugin) CheckPV(pv *v1.PersistentVolume) []plugins.Finding {
	if !p.CanSupport(pv) {
		return nil
	}
	src := pv.Spec.RBD
	var out []plugins.Finding
	for _, e := range validateSource(field.NewPath("spec", "rbd"), src.CephMonitors, src.RBDImage) {
		out = append(out, plugins.Finding{Code: FindingInvalid, Severity: plugins.SeverityBlocker, Field: e.Field, Message: e.Detail,
			Remedy: "fix the PV; it cannot be translated"})
	}
	if len(out) > 0 {
		return out
	}
	if pv.Annotations[AnnVolumeHandle] == "" && !handleOK(src.RBDPool, src.RBDImage) {
		out = append(out, plugins.Finding{Code: FindingHandleResolvesElsewhere, Severity: plugins.SeverityWarning, Field: "spec.rbd.image",
			Message: handleHazard(src),
			Remedy:  "set persistentVolumeReclaimPolicy: Retain before migrating, and delete the image by hand when the volume is released; or set annotation " + AnnVolumeHandle + " to a handle Ceph CSI resolves to this image"})
	}
	ref, ferr := ceph.InTreeSecretRef(src.SecretRef, ceph.ClaimNamespace(pv), field.NewPath("spec", "rbd", "secretRef"))
	if ferr != nil {
		out = append(out, plugins.Finding{Code: FindingInvalid, Severity: plugins.SeverityBlocker, Field: ferr.Field, Message: ferr.Detail,
			Remedy: "set spec.rbd.secretRef.namespace to the namespace of the pods using the volume"})
	} else if ref == nil {
		out = append(out, plugins.Finding{Code: FindingNoSecret, Severity: plugins.SeverityBlocker, Field: "spec.rbd.secretRef",
			Message: "the volume has no secret reference (in-tree read the keyring file " + keyringOrDefault(src.Keyring) + " on the node); Ceph CSI needs a Secret",
			Remedy:  "create a Secret with the user's key under \"key\" (and \"adminId\" for a non-admin user) and set spec.rbd.secretRef before migrating"})
	}
	if u := src.RadosUser; u != "" && u != defaultUser {
		out = append(out, plugins.Finding{Code: FindingNonAdminUser, Severity: plugins.SeverityWarning, Field: "spec.rbd.user",
			Message: "RADOS user \"" + u + "\" is not carried into the CSI request: Ceph CSI takes the user from the secret's adminId field and defaults to admin",
			Remedy:  "add adminId: " + u + " to the secret the PV references (see secrets.CephMigrationSecretFixes)"})
	}
	return out
}

// handleHazard says what Ceph CSI's RBD controller does with the migration
// handle of an image whose handle does not name it (handleOK is false), as
// measured against Ceph CSI v3.12.2 (cephtest.TestCephRBDHandleHazards).
func handleHazard(src *v1.RBDPersistentVolumeSource) string {
	h := volumeid.RBDHandleFor(strings.Join(src.CephMonitors, ","), src.RBDPool, src.RBDImage)
	read, err := volumeid.CephCSIReadRBDHandle(h)
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
		", not " + strconv.Quote(src.RBDImage) + ": expand and delete act on that image when it exists (it is resized, then deleted); " +
		"when it does not, expand fails with Internal (image not found) and delete reports success while this image stays in the pool (it leaks)"
}

func keyringOrDefault(k string) string {
	if k == "" {
		return "/etc/ceph/keyring"
	}
	return k
}

// DoesNotModifyInputs marks the plugin as plugins.NonMutating.
func (p *Plugin) DoesNotModifyInputs() {}

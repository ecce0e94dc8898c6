// Package cephfs translates the removed in-tree CephFS plugin
// (kubernetes.io/cephfs) to Ceph CSI CephFS static volumes
// (cephfs.csi.ceph.com) and back. Kubernetes never shipped such a translator
// and Ceph CSI has no CephFS migration: the handle format and the rules here
// are this project's, and documented.
//
//	in-tree (spec.cephfs)    CSI (spec.csi)
//	monitors                 attribute clusterID (MD5 of the joined list, as for RBD);
//	                         annotation cephfs.csimigrate.io/monitors
//	path                     attribute rootPath ("/" when empty, a leading "/" added);
//	                         the original in cephfs.csimigrate.io/path when different
//	mountOptions             fsName attribute from mds_namespace=<fs> or fs=<fs>; those
//	                         options are removed (Ceph CSI adds its own) and the original
//	                         list kept in cephfs.csimigrate.io/mount-options
//	user                     annotation cephfs.csimigrate.io/user (Ceph CSI reads the
//	                         user from the secret's userID)
//	secretFile               annotation cephfs.csimigrate.io/secret-file (when set)
//	secretRef                nodeStageSecretRef to the derived CSI secret (see below);
//	                         the original in cephfs.csimigrate.io/secret-ref
//	readOnly                 readOnly (access modes are left as they are)
//
// plus staticVolume=true. The handle is volumeid.CephFSHandle: 108 bytes,
// unique per (monitors, file system, path).
//
// Secrets: Ceph CSI stages static CephFS volumes with "userID" and "userKey"
// and has no remap of in-tree "key" secrets; changing the in-tree secret would
// break in-tree mounts still running. The node-stage reference therefore
// names a derived secret, secrets.CephFSCSISecretName(in-tree name, user), in
// the same namespace; secrets.CephFSCSISecret builds it. An empty secret
// namespace (in-tree: the pod's) becomes the claim's namespace. A volume with
// only a secretFile on the node cannot be translated until an administrator
// creates a CSI secret and names it in annotation AnnNodeStageSecret
// ("namespace/name"); until then translation fails with ErrSecretFileOnly and
// CheckPV reports it.
package cephfs

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
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
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/volumeid"
)

// Names of the in-tree plugin, kubernetes.io/cephfs, and the CSI driver, cephfs.csi.ceph.com.
const (
	PluginName = plugin.CephFSInTreePluginName
	DriverName = plugin.CephFSDriverName
)

// Annotations carried on translated PVs.
const (
	AnnMonitors     = "cephfs.csimigrate.io/monitors"
	AnnPath         = "cephfs.csimigrate.io/path"
	AnnUser         = "cephfs.csimigrate.io/user"
	AnnSecretFile   = "cephfs.csimigrate.io/secret-file"
	AnnSecretRef    = "cephfs.csimigrate.io/secret-ref"
	AnnMountOptions = "cephfs.csimigrate.io/mount-options"
	// AnnNodeStageSecret, set by an administrator on an in-tree PV as
	// "namespace/name", names a CSI secret (userID, userKey) to use instead
	// of the derived one; it is the remedy for secretFile-only volumes.
	AnnNodeStageSecret = "cephfs.csimigrate.io/node-stage-secret"
)

const (
	attrStaticVolume = "staticVolume"
	attrClusterID    = "clusterID"
	attrRootPath     = "rootPath"
	attrFSName       = "fsName"
)

// ErrSecretFileOnly: the volume authenticates with a key file on the node
// and has no Secret; see the package documentation for the remedy. Errors
// matching it also match plugin.ErrMissingInformation.
var ErrSecretFileOnly = errors.New("CephFS volume uses only a secretFile")

type secretFileOnlyError struct{ object string }

func (e *secretFileOnlyError) Error() string {
	return e.object + ": " + ErrSecretFileOnly.Error() + " (a key file on the node, no Secret); create a Secret with userID and userKey and name it in annotation " +
		AnnNodeStageSecret + ` ("namespace/name") to migrate it`
}

func (e *secretFileOnlyError) Is(target error) bool {
	return target == ErrSecretFileOnly || target == plugin.ErrMissingInformation
}

// Options configure the plugin.
type Options struct {
	// DriverName is the name the cluster's CSI driver runs under ("": DriverName):
	// translated PVs and StorageClasses name it, and only its PVs are
	// translated back. translate.WithDriverName checks it.
	DriverName string
	// ClusterConfig maps clusterIDs to monitors for reverse translation.
	// (CephFS static volumes are never expanded: no node-expand reference
	// is set, whatever the CSINodeExpandSecret feature says.)
	ClusterConfig ceph.ClusterConfig
}

// Plugin is the CephFS translator; safe for concurrent use.
type Plugin struct{ opts Options }

var (
	_ plugin.InTreePlugin = (*Plugin)(nil)
	_ plugin.Checker      = (*Plugin)(nil)
)

// New returns a CephFS translator.
func New(opts Options) *Plugin { return &Plugin{opts: opts} }

// GetInTreePluginName returns "kubernetes.io/cephfs".
func (p *Plugin) GetInTreePluginName() string { return PluginName }

// GetCSIPluginName returns the CSI driver name: Options.DriverName, by
// default DriverName.
func (p *Plugin) GetCSIPluginName() string { return cmp.Or(p.opts.DriverName, DriverName) }

// CanSupport reports whether pv has a cephfs source.
func (p *Plugin) CanSupport(pv *v1.PersistentVolume) bool { return pv != nil && pv.Spec.CephFS != nil }

// CanSupportInline reports whether vol has a cephfs source.
func (p *Plugin) CanSupportInline(vol *v1.Volume) bool { return vol != nil && vol.CephFS != nil }

// RepairVolumeHandle returns the handle unchanged.
func (p *Plugin) RepairVolumeHandle(volumeHandle, _ string) (string, error) { return volumeHandle, nil }

// DoesNotModifyInputs marks the plugin as plugin.NonMutating.
func (p *Plugin) DoesNotModifyInputs() {}

// TranslateInTreeStorageClassToCSI always fails with plugin.ErrUnsupported:
// in-tree CephFS had no provisioner and no StorageClass parameters.
func (p *Plugin) TranslateInTreeStorageClassToCSI(_ klog.Logger, _ *storage.StorageClass) (*storage.StorageClass, error) {
	return nil, &plugin.UnsupportedError{Plugin: PluginName, What: "StorageClass translation",
		Reason: "in-tree CephFS had no dynamic provisioner; write a cephfs.csi.ceph.com StorageClass (clusterID, fsName, secrets) instead"}
}

// RootPath applies the in-tree plugin's defaulting to a CephFS path: "/" when
// empty, a leading "/" added when missing.
func RootPath(path string) string {
	if path == "" {
		return "/"
	}
	if !strings.HasPrefix(path, "/") {
		return "/" + path
	}
	return path
}

// FSNameFromMountOptions returns the file-system name given by mds_namespace=
// or fs= in mount options (entries may hold comma-separated options; the last
// one wins, as for mount(8)), and the options without them.
func FSNameFromMountOptions(opts []string) (fsName string, rest []string, found bool) {
	fsName, found = fsNameOf(opts)
	if !found {
		return "", slices.Clone(opts), false
	}
	return fsName, withoutFSOptions(opts), true
}

// withoutFSOptions returns opts without the options that name a file system
// (an entry left empty is dropped).
func withoutFSOptions(opts []string) []string {
	var rest []string
	for _, entry := range opts {
		if !hasFSOption(entry) {
			rest = append(rest, entry)
			continue
		}
		var kept strings.Builder
		n := 0
		for o := range strings.SplitSeq(entry, ",") {
			if !isFSOption(o) {
				if n > 0 {
					kept.WriteByte(',')
				}
				kept.WriteString(o)
				n++
			}
		}
		if n > 0 {
			rest = append(rest, kept.String())
		}
	}
	return rest
}

// hasFSOption reports whether a mount-option entry names a file system.
func hasFSOption(entry string) bool {
	for o := range strings.SplitSeq(entry, ",") {
		if isFSOption(o) {
			return true
		}
	}
	return false
}

// isFSOption reports whether a mount option names a file system.
func isFSOption(o string) bool {
	return strings.HasPrefix(o, "mds_namespace=") || strings.HasPrefix(o, "fs=")
}

// parseRef parses "namespace/name", either part possibly empty; "" is no
// reference (ok, has false).
func parseRef(s string) (ref v1.SecretReference, has, ok bool) {
	if s == "" {
		return v1.SecretReference{}, false, true
	}
	ns, name, found := strings.Cut(s, "/")
	if !found {
		return v1.SecretReference{}, false, false
	}
	return v1.SecretReference{Namespace: ns, Name: name}, true, true
}

type source struct {
	mons       []string
	path       string
	user       string
	secretFile string
	secretRef  *v1.SecretReference
	readOnly   bool
}

// stageSecret checks what a translation needs of a source and returns the
// node-stage reference: the CSI secret an administrator named in
// AnnNodeStageSecret, else (deriveName true, Name empty) the namespace of the
// one derived from the in-tree secret and user, named by
// secrets.CephFSCSISecretName (in the claim's namespace when the in-tree one
// is empty). A volume with neither is secretFile-only. kind and name identify
// the object for errors, fp the source's field path.
func stageSecret(kind, name string, fp func() *field.Path, s source, stageOverride, claimNS string) (stage v1.SecretReference, deriveName bool, err error) {
	var errs field.ErrorList
	if len(s.mons) == 0 {
		errs = append(errs, field.Required(fp().Child("monitors"), "at least one Ceph monitor (host:port) is required"))
	}
	switch {
	case stageOverride != "":
		r, has, ok := parseRef(stageOverride)
		if !ok || !has || r.Namespace == "" || r.Name == "" {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "annotations").Key(AnnNodeStageSecret), stageOverride, `want "namespace/name"`))
		}
		stage = r
	case s.secretRef != nil && s.secretRef.Name != "":
		// An empty name was no secret in-tree: the volume used its secret
		// file, and is secretFile-only here.
		// The path is built only for the error.
		stage = v1.SecretReference{Namespace: cephpv.SecretNamespace(s.secretRef, claimNS)}
		if stage.Namespace == "" {
			_, ferr := cephpv.InTreeSecretRef(s.secretRef, claimNS, fp().Child("secretRef"))
			errs = append(errs, ferr)
		}
		deriveName = true
	case len(errs) == 0:
		return stage, false, &secretFileOnlyError{object: kind + " \"" + name + "\""}
	}
	if len(errs) > 0 {
		return stage, false, &plugin.InvalidError{Kind: kind, Name: name, Errs: errs}
	}
	return stage, deriveName, nil
}

// staticVolume is what the forward translation of a CephFS source sets in
// the CSI source of a Ceph CSI static volume.
type staticVolume struct {
	handle    string
	clusterID string
	root      string
	fsName    string
	// stage is the node-stage secret: the one an administrator named, or
	// the one derived from the in-tree secret and user.
	stage    v1.SecretReference
	readOnly bool
}

// newStaticVolume checks s and gives the static volume its forward
// translation sets up. fsName is the file system the mount options name.
func newStaticVolume(kind, name string, fp func() *field.Path, s source, fsName, stageOverride, claimNS string) (staticVolume, error) {
	stage, deriveName, err := stageSecret(kind, name, fp, s, stageOverride, claimNS)
	if err != nil {
		return staticVolume{}, err
	}
	if deriveName {
		stage.Name = secrets.CephFSCSISecretName(s.secretRef.Name, s.user)
	}
	root := RootPath(s.path)
	h := volumeid.NewCephFSHandle(s.mons, fsName, root)
	return staticVolume{handle: h.String(), clusterID: h.ClusterID, root: root, fsName: fsName, stage: stage, readOnly: s.readOnly}, nil
}

// attributes appends the volume attributes of v to a.
func (v *staticVolume) attributes(a []overrides.Attribute) []overrides.Attribute {
	a = append(a,
		overrides.Attribute{Key: attrStaticVolume, Value: "true"},
		overrides.Attribute{Key: attrClusterID, Value: v.clusterID},
		overrides.Attribute{Key: attrRootPath, Value: v.root})
	if v.fsName != "" {
		a = append(a, overrides.Attribute{Key: attrFSName, Value: v.fsName})
	}
	return a
}

// fsNameOf returns the file-system name FSNameFromMountOptions finds, without
// allocating.
func fsNameOf(opts []string) (fsName string, found bool) {
	for _, entry := range opts {
		for o := range strings.SplitSeq(entry, ",") {
			if v, ok := strings.CutPrefix(o, "mds_namespace="); ok {
				fsName, found = v, true
			} else if v, ok := strings.CutPrefix(o, "fs="); ok {
				fsName, found = v, true
			}
		}
	}
	return fsName, found
}

// inlineCSISource gives the CSI source of an inline volume.
func (p *Plugin) inlineCSISource(name string, fp func() *field.Path, s source, claimNS string) (*v1.CSIPersistentVolumeSource, error) {
	v, err := newStaticVolume("Volume", name, fp, s, "", "", claimNS)
	if err != nil {
		return nil, err
	}
	var attrs [4]overrides.Attribute
	blk := &inlineBlock{stage: v.stage}
	blk.csi = v1.CSIPersistentVolumeSource{
		Driver:             p.GetCSIPluginName(),
		VolumeHandle:       v.handle,
		ReadOnly:           v.readOnly,
		VolumeAttributes:   overrides.AttributeMap(v.attributes(attrs[:0])),
		NodeStageSecretRef: &blk.stage,
	}
	return &blk.csi, nil
}

type inlineBlock struct {
	csi   v1.CSIPersistentVolumeSource
	stage v1.SecretReference
}

// pvSource reads what translate needs from a PV.
func pvSource(src *v1.CephFSPersistentVolumeSource) source {
	return source{mons: src.Monitors, path: src.Path, user: src.User, secretFile: src.SecretFile, secretRef: src.SecretRef, readOnly: src.ReadOnly}
}

func cephfsPath() *field.Path { return field.NewPath("spec", "cephfs") }

// forwardBlock holds a translated PV with the parts it points to.
type forwardBlock struct {
	pv    pvcopy.Buffer
	csi   v1.CSIPersistentVolumeSource
	stage v1.SecretReference
}

// TranslateInTreePVToCSI translates a PV with spec.cephfs to a Ceph CSI
// static volume. pv is not modified.
func (p *Plugin) TranslateInTreePVToCSI(_ klog.Logger, pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	if pv == nil || pv.Spec.CephFS == nil {
		return nil, check.InTreePV(pv, "cephfs", "a CephFS volume source")
	}
	src := pv.Spec.CephFS
	fsName, found := fsNameOf(pv.Spec.MountOptions)
	v, err := newStaticVolume("PersistentVolume", pv.Name, cephfsPath, pvSource(src), fsName,
		pv.Annotations[AnnNodeStageSecret], cephpv.ClaimNamespace(pv))
	if err != nil {
		return nil, err
	}
	blk := &forwardBlock{stage: v.stage}
	extra := 2 // monitors, user
	for _, carried := range []bool{found, src.Path != v.root, src.SecretFile != "", src.SecretRef != nil} {
		if carried {
			extra++
		}
	}
	var out *v1.PersistentVolume
	if found {
		out = pvcopy.IntoReplacingMounts(&blk.pv, pv, extra, withoutFSOptions(pv.Spec.MountOptions))
	} else {
		out = pvcopy.Into(&blk.pv, pv, extra)
	}
	blk.csi = v1.CSIPersistentVolumeSource{
		Driver:             p.GetCSIPluginName(),
		VolumeHandle:       v.handle,
		ReadOnly:           v.readOnly,
		NodeStageSecretRef: &blk.stage,
	}
	out.Spec.CSI = &blk.csi
	if found {
		annot.Set(out, AnnMountOptions, annot.EncodeList(pv.Spec.MountOptions))
	}
	annot.Set(out, AnnMonitors, annot.EncodeList(src.Monitors))
	annot.Set(out, AnnUser, src.User)
	if src.Path != v.root {
		annot.Set(out, AnnPath, src.Path)
	}
	if src.SecretFile != "" {
		annot.Set(out, AnnSecretFile, src.SecretFile)
	}
	if r := src.SecretRef; r != nil {
		annot.Set(out, AnnSecretRef, r.Namespace+"/"+r.Name)
	}
	var attrs [4]overrides.Attribute
	if err := overrides.Forward(out, v.attributes(attrs[:0])); err != nil {
		return nil, err
	}
	return out, nil
}

// TranslateCSIPVToInTree translates a PV of cephfs.csi.ceph.com back to
// spec.cephfs. Monitors come from the carried annotation, the "monitors"
// attribute or the cluster config, else the error matches
// plugin.ErrMissingInformation. pv is not modified.
func (p *Plugin) TranslateCSIPVToInTree(pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	c, err := check.CSISource(pv, p.GetCSIPluginName())
	if err != nil {
		return nil, err
	}
	attrs := c.VolumeAttributes
	clusterID := attrs[attrClusterID]
	if clusterID == "" {
		if h, err := volumeid.ParseCephFSHandle(c.VolumeHandle); err == nil {
			clusterID = h.ClusterID
		}
	}
	blk := new(reverseBlock)
	out := pvcopy.Into(&blk.pv, pv, 2)
	carried, carriedOK := annot.Take(out, AnnMonitors)
	mons, err := cephpv.VolumeMonitors(p.opts.ClusterConfig, cephpv.VolumeSources{Carried: carried, HasCarried: carriedOK, Attributes: attrs, ClusterID: clusterID})
	if err != nil {
		return nil, check.MissingMonitors(pv.Name, "spec.cephfs.monitors", err)
	}
	path, ok := annot.Take(out, AnnPath)
	if !ok {
		path = attrs[attrRootPath]
	}
	user, _ := annot.Take(out, AnnUser)
	secretFile, _ := annot.Take(out, AnnSecretFile)
	blk.src = v1.CephFSPersistentVolumeSource{Monitors: mons, Path: path, User: user, SecretFile: secretFile, ReadOnly: c.ReadOnly}
	if raw, ok := annot.Take(out, AnnSecretRef); ok {
		r, has, valid := parseRef(raw)
		if !valid {
			return nil, plugin.Invalid("PersistentVolume", pv.Name, field.Invalid(field.NewPath("metadata", "annotations").Key(AnnSecretRef), raw, `want "namespace/name"`))
		}
		if has {
			blk.ref = r
			blk.src.SecretRef = &blk.ref
		}
	} else if c.NodeStageSecretRef != nil {
		blk.ref = *c.NodeStageSecretRef
		blk.src.SecretRef = &blk.ref
	}
	if raw, ok := annot.Take(out, AnnMountOptions); ok {
		list, err := annot.DecodeList(raw)
		if err != nil {
			return nil, plugin.Invalid("PersistentVolume", pv.Name, field.Invalid(field.NewPath("metadata", "annotations").Key(AnnMountOptions), raw, err.Error()))
		}
		out.Spec.MountOptions = list
	} else if fs := attrs[attrFSName]; fs != "" {
		if _, found := fsNameOf(out.Spec.MountOptions); !found {
			out.Spec.MountOptions = append(out.Spec.MountOptions, "mds_namespace="+fs)
		}
	}
	out.Spec.CephFS = &blk.src
	// What a forward translation of the result sets, for overrides.Record.
	fsName, _ := fsNameOf(out.Spec.MountOptions)
	v, err := newStaticVolume("PersistentVolume", pv.Name, cephfsPath, pvSource(out.Spec.CephFS), fsName,
		out.Annotations[AnnNodeStageSecret], cephpv.ClaimNamespace(out))
	if err != nil {
		return nil, fmt.Errorf("checking the reverse translation: %w", err)
	}
	var fattrs [4]overrides.Attribute
	f := overrides.Forwarded{VolumeHandle: v.handle, ReadOnly: v.readOnly, Attributes: v.attributes(fattrs[:0]),
		AccessModes: out.Spec.AccessModes}
	f = f.WithRef(secrets.NodeStage, &v.stage)
	if err := overrides.Record(out, pv, &f); err != nil {
		return nil, err
	}
	return out, nil
}

// reverseBlock holds a PV translated back with the parts it points to.
type reverseBlock struct {
	pv  pvcopy.Buffer
	src v1.CephFSPersistentVolumeSource
	ref v1.SecretReference
}

// TranslateInTreeInlineVolumeToCSI translates a pod's inline cephfs volume.
// The secret's namespace is the pod's.
func (p *Plugin) TranslateInTreeInlineVolumeToCSI(_ klog.Logger, vol *v1.Volume, podNamespace string) (*v1.PersistentVolume, error) {
	if vol == nil || vol.CephFS == nil {
		return nil, plugin.Invalid("Volume", "", field.Required(field.NewPath("cephfs"), "an inline CephFS volume source is required"))
	}
	src := vol.CephFS
	var ref *v1.SecretReference
	if src.SecretRef != nil && src.SecretRef.Name != "" {
		ref = &v1.SecretReference{Name: src.SecretRef.Name, Namespace: podNamespace}
	}
	csi, err := p.inlineCSISource(vol.Name, func() *field.Path { return field.NewPath("volumes").Key(vol.Name).Child("cephfs") },
		source{mons: src.Monitors, path: src.Path, user: src.User, secretFile: src.SecretFile, secretRef: ref, readOnly: src.ReadOnly},
		podNamespace)
	if err != nil {
		return nil, err
	}
	fs := v1.PersistentVolumeFilesystem
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: p.GetCSIPluginName() + "-" + csi.VolumeHandle},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: csi},
			AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteMany},
			VolumeMode:             &fs,
		},
	}, nil
}

// Finding codes reported by CheckPV.
const (
	FindingSecretFileOnly = "CephFSSecretFileOnly"
	FindingCSISecret      = "CephFSNeedsCSISecret"
	FindingInvalid        = "CephFSInvalidSource"
	// FindingNeverDeleted: the PV's reclaim policy is Delete (or Recycle),
	// but Ceph CSI never deletes a static volume: a rewrite keeps Retain.
	FindingNeverDeleted = "CephFSStaticNeverDeleted"
)

// CheckPV reports what a CephFS PV needs before migration: a reclaim policy
// Ceph CSI will not honour (Delete: it never deletes static volumes), a CSI secret to
// derive (always, unless one is named in AnnNodeStageSecret), a secretFile-only
// volume (blocker), or fields that prevent translation.
func (p *Plugin) CheckPV(pv *v1.PersistentVolume) []plugin.Finding {
	if !p.CanSupport(pv) {
		return nil
	}
	out := p.checkSecret(pv)
	// While a rewrite is under way the PV has Retain, and the policy to
	// restore is recorded: that is the one Ceph CSI would not honour.
	policy := pv.Spec.PersistentVolumeReclaimPolicy
	if orig, ok := pv.Annotations[plugin.AnnOriginalReclaimPolicy]; ok {
		policy = v1.PersistentVolumeReclaimPolicy(orig)
	}
	if policy == v1.PersistentVolumeReclaimDelete || policy == v1.PersistentVolumeReclaimRecycle {
		out = append(out, neverDeleted(pv, policy))
	}
	return out
}

// neverDeleted is the finding of a CephFS PV whose reclaim policy asks for
// its deletion: the migrated volume is a static Ceph CSI volume, which Ceph
// CSI never deletes.
func neverDeleted(pv *v1.PersistentVolume, policy v1.PersistentVolumeReclaimPolicy) plugin.Finding {
	src := pv.Spec.CephFS
	path := src.Path
	if path == "" {
		path = "/"
	}
	msg := fmt.Sprintf("reclaim policy %s: the migrated volume is a static Ceph CSI volume (path %s), which Ceph CSI never deletes; the rewritten PV keeps Retain", policy, path)
	remedy := "when the claim is released, delete the directory " + path + " by hand, then the PV"
	if by := pv.Annotations[plugin.AnnProvisionedBy]; by != "" && by != PluginName {
		msg += "; " + by + ", which provisioned it, deleted the share and its Ceph user when the claim went: after the migration nothing does"
		remedy = "when the claim is released, delete the directory " + path + " and the Ceph user client." + userOrAdmin(src.User) + " (ceph auth del) by hand, then the PV"
	}
	return plugin.Finding{Code: FindingNeverDeleted, Severity: plugin.SeverityWarning, Field: "spec.persistentVolumeReclaimPolicy", Message: msg, Remedy: remedy}
}

// checkSecret is CheckPV's check of the credentials.
func (p *Plugin) checkSecret(pv *v1.PersistentVolume) []plugin.Finding {
	ref, deriveName, err := stageSecret("PersistentVolume", pv.Name, cephfsPath, pvSource(pv.Spec.CephFS),
		pv.Annotations[AnnNodeStageSecret], cephpv.ClaimNamespace(pv))
	if deriveName {
		ref.Name = secrets.CephFSCSISecretName(pv.Spec.CephFS.SecretRef.Name, pv.Spec.CephFS.User)
	}
	switch {
	case errors.Is(err, ErrSecretFileOnly):
		return []plugin.Finding{{Code: FindingSecretFileOnly, Severity: plugin.SeverityBlocker, Field: "spec.cephfs.secretFile",
			Message: "the volume authenticates with a key file on the node (" + pv.Spec.CephFS.SecretFile + "), not a Secret; Ceph CSI needs a Secret",
			Remedy:  "create a Secret with userID and userKey from that key file and set annotation " + AnnNodeStageSecret + "=<namespace>/<name> on the PV"}}
	case err != nil:
		return []plugin.Finding{{Code: FindingInvalid, Severity: plugin.SeverityBlocker, Field: "spec.cephfs", Message: err.Error(),
			Remedy: "bind the PV to its claim (the in-tree plugin read the secret in the namespace of the pod using the volume), or create a Secret with userID and userKey and set annotation " + AnnNodeStageSecret + "=<namespace>/<name> on the PV"}}
	case pv.Annotations[AnnNodeStageSecret] != "":
		return nil
	}
	return []plugin.Finding{{Code: FindingCSISecret, Severity: plugin.SeverityWarning, Field: "spec.cephfs.secretRef",
		Message: "Ceph CSI stages static CephFS volumes with userID/userKey; the migrated PV references the derived secret " + ref.Namespace + "/" + ref.Name,
		Remedy: "before migrating, create Secret " + ref.Namespace + "/" + ref.Name + " with userID: " + userOrAdmin(pv.Spec.CephFS.User) + " and userKey: the key of Secret " +
			ref.Namespace + "/" + pv.Spec.CephFS.SecretRef.Name, Action: plugin.ActionCreateSecret, ActsOn: "Secret " + ref.Namespace + "/" + ref.Name}}
}

func userOrAdmin(u string) string {
	if u == "" {
		return secrets.CephDefaultUser
	}
	return u
}

// Package vsphere translates the removed in-tree vSphere plugin
// (kubernetes.io/vsphere-volume) to the vSphere CSI driver
// (csi.vsphere.vmware.com) and back.
//
// Forward translation of a PV matches k8s.io/csi-translation-lib (v0.30.14 and
// v0.37.2 share the logic): the handle is the volume path as is (the driver
// maps ".vmdk" handles to its FCD IDs), the storage policy name becomes the
// attribute storagepolicyname, and zone and region topology move to the CSI
// keys, found in upstream's order (GA key in node affinity, beta key in node
// affinity, GA label, beta label). The CSI keys are configurable (see
// [Topology]) for drivers that run with other topology categories.
//
// Unlike upstream, translation is lossless and never panics:
//
//	in-tree (spec.vsphereVolume)   CSI (spec.csi)
//	volumePath                     volumeHandle (".vmdk" appended where missing,
//	                               as in-tree did; the path in annotation
//	                               vsphere.csimigrate.io/volume-path); back from
//	                               initialvolumefilepath, else from a handle
//	                               that is a volume path
//	fsType                         fsType
//	storagePolicyName              attribute storagepolicyname
//	storagePolicyID                annotation vsphere.csimigrate.io/storage-policy-id
//	node affinity / labels         CSI topology keys ("zone-a__zone-b" labels
//	                               split into values); how they were derived in
//	                               annotation vsphere.csimigrate.io/topology
//
// Inline volumes keep their storage policy (upstream dereferences a nil PV).
// StorageClasses: upstream's mapping, plus region keys in allowedTopologies,
// errors for unknown keys, and errors for what the driver rejects in
// migration mode (non-thin disk formats, vSAN capabilities) unless
// Options.AllowUnsupportedParameters is set.
package vsphere

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	storage "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/internal/annot"
	"github.com/csimigrate/csimigrate/internal/check"
	"github.com/csimigrate/csimigrate/internal/overrides"
	"github.com/csimigrate/csimigrate/internal/pvcopy"
	"github.com/csimigrate/csimigrate/internal/scparams"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/volumeid"
)

// Names of the in-tree plugin, kubernetes.io/vsphere-volume, and the CSI driver, csi.vsphere.vmware.com.
const (
	PluginName = plugin.VSphereInTreePluginName
	DriverName = plugin.VSphereDriverName
)

// Keys read and written.
const (
	// AttrStoragePolicyName is the volume attribute of the storage policy.
	AttrStoragePolicyName = "storagepolicyname"
	// AttrInitialVolumeFilePath is the attribute in which the driver returns
	// the volume path of a volume it created in migration mode.
	AttrInitialVolumeFilePath = "initialvolumefilepath"
	// AnnStoragePolicyID carries the in-tree storagePolicyID.
	AnnStoragePolicyID = "vsphere.csimigrate.io/storage-policy-id"
	// AnnTopology records how forward translation derived the CSI topology,
	// as "zone=<how>,region=<how>[,created=<what>]" where <how> is
	// affinity-ga, affinity-beta, label-ga or label-beta and <what> what had to
	// be created to hold label-derived topology (nodeAffinity, required or
	// terms). Reverse translation undoes exactly that and adds no labels.
	AnnTopology = "vsphere.csimigrate.io/topology"
	// AnnNodeAffinity holds the original node affinity as JSON when it
	// already used the CSI topology keys (possible with LegacyTopology, where
	// they are the beta in-tree keys), so that renaming back would be
	// ambiguous; the reverse translation restores it verbatim.
	AnnNodeAffinity = "vsphere.csimigrate.io/node-affinity"
	// AnnVolumePath carries the in-tree volume path when it does not end in
	// ".vmdk": the handle is then the path with ".vmdk" appended, as the
	// in-tree plugin resolved it (see [CanonicalVolumePath]), and the
	// reverse translation restores the path as it was.
	AnnVolumePath = "vsphere.csimigrate.io/volume-path"

	// Default CSI topology keys.
	DefaultZoneKey   = "topology.csi.vmware.com/zone"
	DefaultRegionKey = "topology.csi.vmware.com/region"
	// CategoryKeyPrefix is the prefix of the driver's topology keys for
	// topology-categories.
	CategoryKeyPrefix = "topology.csi.vmware.com/"
	// MaxTopologyCategories is the driver's limit on topology-categories.
	MaxTopologyCategories = 5
)

// Topology holds the CSI topology keys the driver reports. The zero value
// means the defaults.
type Topology struct {
	// ZoneKey replaces the zone keys (default DefaultZoneKey).
	ZoneKey string
	// RegionKey replaces the region keys (default DefaultRegionKey).
	RegionKey string
}

// TopologyForCategories returns the keys of a driver configured with
// topology-categories = "zone,region".
func TopologyForCategories(zoneCategory, regionCategory string) Topology {
	return Topology{ZoneKey: CategoryKeyPrefix + zoneCategory, RegionKey: CategoryKeyPrefix + regionCategory}
}

// LegacyTopology returns the keys of a driver configured with the legacy
// [Labels] zone/region settings: the beta failure-domain labels.
func LegacyTopology() Topology {
	return Topology{ZoneKey: v1.LabelFailureDomainBetaZone, RegionKey: v1.LabelFailureDomainBetaRegion}
}

func (t Topology) zone() string {
	if t.ZoneKey == "" {
		return DefaultZoneKey
	}
	return t.ZoneKey
}

func (t Topology) region() string {
	if t.RegionKey == "" {
		return DefaultRegionKey
	}
	return t.RegionKey
}

// LabelsConfig renders the driver's configuration section that makes it
// report these keys, with additional categories appended:
//
//	[Labels]
//	topology-categories = "zone,region"
//
// Keys outside topology.csi.vmware.com/ cannot be expressed as categories
// (the legacy beta labels use the driver's [Labels] zone/region settings),
// and the driver accepts at most MaxTopologyCategories categories.
func (t Topology) LabelsConfig(additional ...string) (string, error) {
	cats := make([]string, 0, 2+len(additional))
	for _, k := range []string{t.zone(), t.region()} {
		c, ok := strings.CutPrefix(k, CategoryKeyPrefix)
		if !ok || c == "" {
			return "", fmt.Errorf("topology key %q is not %s<category>; a driver reporting it is configured with [Labels] zone/region, not topology-categories", k, CategoryKeyPrefix)
		}
		cats = append(cats, c)
	}
	cats = append(cats, additional...)
	for _, c := range cats {
		if c == "" || strings.ContainsAny(c, ",\"\n") {
			return "", fmt.Errorf("topology category %q must be non-empty and contain no comma, quote or newline", c)
		}
	}
	if len(cats) > MaxTopologyCategories {
		return "", fmt.Errorf("%d topology categories %q: the vSphere CSI driver accepts at most %d", len(cats), cats, MaxTopologyCategories)
	}
	if d := duplicates(cats); d != "" {
		return "", fmt.Errorf("topology category %q is listed twice", d)
	}
	return "[Labels]\ntopology-categories = \"" + strings.Join(cats, ",") + "\"\n", nil
}

func duplicates(s []string) string {
	seen := map[string]bool{}
	for _, v := range s {
		if seen[v] {
			return v
		}
		seen[v] = true
	}
	return ""
}

// Options configure the plugin. The zero value matches upstream.
type Options struct {
	// DriverName is the name the cluster's CSI driver runs under ("": DriverName):
	// translated PVs and StorageClasses name it, and only its PVs are
	// translated back. translate.WithDriverName checks it.
	DriverName string
	// Topology sets the CSI topology keys.
	Topology Topology
	// AllowUnsupportedParameters passes StorageClass parameters the vSphere
	// CSI driver rejects in migration mode (non-thin diskformat, vSAN
	// capabilities) through as "-migrationparam" keys, for a driver that
	// accepts them, instead of failing.
	AllowUnsupportedParameters bool
}

// Plugin is the vSphere translator; safe for concurrent use.
type Plugin struct {
	opts Options
}

var (
	_ plugin.InTreePlugin = (*Plugin)(nil)
	_ plugin.Checker      = (*Plugin)(nil)
)

// New returns a vSphere translator.
func New(opts Options) *Plugin { return &Plugin{opts: opts} }

// GetInTreePluginName returns "kubernetes.io/vsphere-volume".
func (p *Plugin) GetInTreePluginName() string { return PluginName }

// GetCSIPluginName returns the CSI driver name: Options.DriverName, by
// default DriverName.
func (p *Plugin) GetCSIPluginName() string { return cmp.Or(p.opts.DriverName, DriverName) }

// CanSupport reports whether pv has a vsphereVolume source.
func (p *Plugin) CanSupport(pv *v1.PersistentVolume) bool {
	return pv != nil && pv.Spec.VsphereVolume != nil
}

// CanSupportInline reports whether vol has a vsphereVolume source.
func (p *Plugin) CanSupportInline(vol *v1.Volume) bool { return vol != nil && vol.VsphereVolume != nil }

// RepairVolumeHandle returns the handle unchanged.
func (p *Plugin) RepairVolumeHandle(volumeHandle, _ string) (string, error) { return volumeHandle, nil }

// DoesNotModifyInputs marks the plugin as plugin.NonMutating.
func (p *Plugin) DoesNotModifyInputs() {}

func gaOrBeta(key string) string {
	switch key {
	case v1.LabelTopologyZone, v1.LabelTopologyRegion:
		return "ga"
	}
	return "beta"
}

func keyFor(kind, level string) string {
	switch kind + "-" + level {
	case "zone-ga":
		return v1.LabelTopologyZone
	case "zone-beta":
		return v1.LabelFailureDomainBetaZone
	case "region-ga":
		return v1.LabelTopologyRegion
	case "region-beta":
		return v1.LabelFailureDomainBetaRegion
	}
	return ""
}

// multiZoneSeparator joins the zones of a volume in several zones in one
// label value (Kubernetes' volumehelpers.LabelZonesToSet and
// LabelZonesFromSet).
const multiZoneSeparator = "__"

// moveTopology moves one of zone/region to the CSI key and returns how, for
// AnnTopology ("" when nothing was moved).
func moveTopology(out *v1.PersistentVolume, labels map[string]string, inTreeKey, csiKey string, created *string) string {
	if hasTopologyValues(out.Spec.NodeAffinity, inTreeKey) {
		replaceTopologyKey(out, inTreeKey, csiKey)
		if gaOrBeta(inTreeKey) == "ga" {
			return "affinity-ga"
		}
		return "affinity-beta"
	}
	if label, ok := labels[inTreeKey]; ok && label != "" {
		// "zone-a__zone-b": a volume in several zones, as Kubernetes'
		// volumehelpers.LabelZonesToSet splits it.
		c, added := addTopology(out, csiKey, strings.Split(label, multiZoneSeparator))
		if added {
			if c != createdNone {
				*created = c
			}
			if gaOrBeta(inTreeKey) == "ga" {
				return "label-ga"
			}
			return "label-beta"
		}
	}
	return ""
}

// forwardOf gives what the forward translation of pv sets in the CSI source
// and access modes, and its volume attributes, appended to attrs (returned
// apart, so that attrs can stay on the caller's stack).
func forwardOf(pv *v1.PersistentVolume, attrs []overrides.Attribute) (overrides.Forwarded, []overrides.Attribute) {
	src := pv.Spec.VsphereVolume
	f := overrides.Forwarded{VolumeHandle: CanonicalVolumePath(src.VolumePath), FSType: src.FSType, AccessModes: pv.Spec.AccessModes}
	if src.StoragePolicyName != "" {
		attrs = append(attrs, overrides.Attribute{Key: AttrStoragePolicyName, Value: src.StoragePolicyName})
	}
	return f, attrs
}

// CanonicalVolumePath returns the volume path as the in-tree plugin resolved
// it: with ".vmdk" appended when it does not end in ".vmdk" (the legacy
// vSphere cloud provider's rule, on which published example PVs such as
// "[DatastoreName] volumes/myDisk" rely). The vSphere CSI driver recognises
// a migrated volume by ".vmdk" in its handle.
func CanonicalVolumePath(path string) string {
	if path == "" || strings.HasSuffix(path, ".vmdk") {
		return path
	}
	return path + ".vmdk"
}

// TranslateInTreePVToCSI translates a PV with spec.vsphereVolume to one for
// csi.vsphere.vmware.com. pv is not modified. A volume path without ".vmdk"
// gets it appended in the handle, as the in-tree plugin did, and is kept in
// AnnVolumePath.
func (p *Plugin) TranslateInTreePVToCSI(_ klog.Logger, pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	if pv == nil || pv.Spec.VsphereVolume == nil {
		return nil, check.InTreePV(pv, "vsphereVolume", "a vSphere volume source")
	}
	src := pv.Spec.VsphereVolume
	if src.VolumePath == "" {
		return nil, plugin.Invalid("PersistentVolume", pv.Name,
			field.Required(field.NewPath("spec", "vsphereVolume", "volumePath"), `a volume path such as "[datastore] kubevols/disk.vmdk" is required`))
	}
	var rec overrides.Recorded
	if err := rec.Read(pv); err != nil {
		return nil, err
	}
	var attrs [1]overrides.Attribute
	f, a := forwardOf(pv, attrs[:0])
	extra := 2
	if rec.Present() {
		extra-- // removed from the copy before anything is added
	}
	blk := new(forwardBlock)
	out := pvcopy.Into(&blk.pv, pv, extra)
	rec.RemoveFrom(out)
	blk.csi = v1.CSIPersistentVolumeSource{
		Driver:       p.GetCSIPluginName(),
		VolumeHandle: f.VolumeHandle,
		FSType:       f.FSType,
	}
	out.Spec.CSI = &blk.csi
	if src.StoragePolicyID != "" {
		annot.Set(out, AnnStoragePolicyID, src.StoragePolicyID)
	}
	if f.VolumeHandle != src.VolumePath {
		annot.Set(out, AnnVolumePath, src.VolumePath)
	}
	zoneCSI, regionCSI := p.opts.Topology.zone(), p.opts.Topology.region()
	if hasTopologyKey(pv.Spec.NodeAffinity, zoneCSI) || hasTopologyKey(pv.Spec.NodeAffinity, regionCSI) {
		b, err := json.Marshal(pv.Spec.NodeAffinity)
		if err != nil {
			return nil, plugin.Invalid("PersistentVolume", pv.Name, field.Invalid(field.NewPath("spec", "nodeAffinity"), "", err.Error()))
		}
		annot.Set(out, AnnNodeAffinity, string(b))
	}
	zoneKey, regionKey := topologyLabels(pv)
	var created string
	zoneHow := moveTopology(out, pv.Labels, zoneKey, zoneCSI, &created)
	regionHow := moveTopology(out, pv.Labels, regionKey, regionCSI, &created)
	// Record what was done whenever the result carries a CSI key, so that the
	// reverse translation undoes exactly that and never renames keys that
	// were already there (with LegacyTopology the CSI keys are in-tree keys).
	if zoneHow != "" || regionHow != "" ||
		hasTopologyKey(out.Spec.NodeAffinity, zoneCSI) || hasTopologyKey(out.Spec.NodeAffinity, regionCSI) {
		v := "zone=" + zoneHow + ",region=" + regionHow
		if created != "" {
			v += ",created=" + created
		}
		annot.Set(out, AnnTopology, v)
	}
	// The attributes, with the recorded ones merged in: one map.
	if err := rec.Forward(out, a); err != nil {
		return nil, err
	}
	if out.Spec.CSI.VolumeAttributes == nil {
		// Upstream sets an empty map; keep it for equal output.
		out.Spec.CSI.VolumeAttributes = map[string]string{}
	}
	// The handle is the volume path, as csi-translation-lib computes it,
	// also for a volume the driver provisioned (its FCD ID then stays in
	// plugin.AnnOriginalVolumeHandle; the driver maps the path to it).
	overrides.KeepStockHandle(out, f.VolumeHandle)
	return out, nil
}

func parseTopologyAnn(s string) (zone, region, created string, ok bool) {
	for _, part := range strings.Split(s, ",") {
		k, v, found := strings.Cut(part, "=")
		if !found {
			return "", "", "", false
		}
		switch k {
		case "zone":
			zone = v
		case "region":
			region = v
		case "created":
			created = v
		default:
			return "", "", "", false
		}
	}
	for _, how := range []string{zone, region} {
		switch how {
		case "", "affinity-ga", "affinity-beta", "label-ga", "label-beta":
		default:
			return "", "", "", false
		}
	}
	switch created {
	case createdNone, createdNodeAffinity, createdRequired, createdTerms:
	default:
		return "", "", "", false
	}
	return zone, region, created, true
}

// undoTopology reverses moveTopology for one of zone/region.
func undoTopology(out *v1.PersistentVolume, kind, how, csiKey, created string) {
	src, level, _ := strings.Cut(how, "-")
	switch src {
	case "affinity":
		replaceTopologyKey(out, csiKey, keyFor(kind, level))
	case "label":
		removeTopology(out, csiKey, created)
	}
}

// forwardBlock holds a translated PV with its CSI source.
type forwardBlock struct {
	pv  pvcopy.Buffer
	csi v1.CSIPersistentVolumeSource
}

// reverseBlock holds a PV translated back with its vSphere source.
type reverseBlock struct {
	pv  pvcopy.Buffer
	src v1.VsphereVirtualDiskVolumeSource
}

// TranslateCSIPVToInTree translates a PV of csi.vsphere.vmware.com back to
// spec.vsphereVolume. The volume path comes from attribute
// initialvolumefilepath, else from a handle that is a volume path; otherwise
// the error matches plugin.ErrMissingInformation (an empty volumePath would
// be rejected by the API server). pv is not modified.
func (p *Plugin) TranslateCSIPVToInTree(pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	c, err := check.CSISource(pv, p.GetCSIPluginName())
	if err != nil {
		return nil, err
	}
	path := c.VolumeAttributes[AttrInitialVolumeFilePath]
	if path == "" && volumeid.LooksLikeVSpherePath(c.VolumeHandle) {
		path = c.VolumeHandle
	}
	if _, err := volumeid.ParseVSpherePath(c.VolumeHandle); path == "" && err == nil {
		// A path without ".vmdk", as the stock translator leaves it.
		path = c.VolumeHandle
	}
	if path == "" {
		return nil, &plugin.MissingInformationError{
			Field:  "spec.vsphereVolume.volumePath",
			Object: `PersistentVolume "` + pv.Name + `"`,
			Detail: fmt.Sprintf("the volume has no %s attribute and its handle %q is not a volume path ([datastore] path.vmdk); volumes the driver created outside migration mode have no in-tree equivalent", AttrInitialVolumeFilePath, c.VolumeHandle),
		}
	}
	blk := new(reverseBlock)
	out := pvcopy.Into(&blk.pv, pv, 2)
	policyID, _ := annot.Take(out, AnnStoragePolicyID)
	if orig, ok := out.Annotations[AnnVolumePath]; ok && CanonicalVolumePath(orig) == path {
		annot.Take(out, AnnVolumePath)
		path = orig
	}
	blk.src = v1.VsphereVirtualDiskVolumeSource{
		VolumePath:        path,
		FSType:            c.FSType,
		StoragePolicyName: c.VolumeAttributes[AttrStoragePolicyName],
		StoragePolicyID:   policyID,
	}
	out.Spec.VsphereVolume = &blk.src
	zoneCSI, regionCSI := p.opts.Topology.zone(), p.opts.Topology.region()
	if raw, ok := annot.Take(out, AnnNodeAffinity); ok {
		var na *v1.VolumeNodeAffinity
		if err := json.Unmarshal([]byte(raw), &na); err != nil {
			return nil, plugin.Invalid("PersistentVolume", pv.Name, field.Invalid(field.NewPath("metadata", "annotations").Key(AnnNodeAffinity), raw,
				"must be the JSON of a VolumeNodeAffinity: "+err.Error()))
		}
		annot.Take(out, AnnTopology)
		out.Spec.NodeAffinity = na
	} else if raw, ok := annot.Take(out, AnnTopology); ok {
		zone, region, created, valid := parseTopologyAnn(raw)
		if !valid {
			return nil, plugin.Invalid("PersistentVolume", pv.Name, field.Invalid(field.NewPath("metadata", "annotations").Key(AnnTopology), raw,
				`want "zone=<how>,region=<how>[,created=<what>]" with <how> one of affinity-ga, affinity-beta, label-ga, label-beta or empty`))
		}
		// Undo in reverse order of the forward translation.
		undoTopology(out, "region", region, regionCSI, created)
		undoTopology(out, "zone", zone, zoneCSI, created)
	} else {
		// A CSI PV that was not translated here (for example one the driver
		// created): as upstream, use the keys the PV's labels suggest and
		// label the PV with its zone and region for in-tree scheduling.
		zoneKey, regionKey := topologyLabels(out)
		replaceTopologyKey(out, zoneCSI, zoneKey)
		replaceTopologyKey(out, regionCSI, regionKey)
		for _, k := range []string{zoneKey, regionKey} {
			if vals := topologyValues(out.Spec.NodeAffinity, k); len(vals) > 0 {
				if _, ok := out.Labels[k]; !ok {
					if out.Labels == nil {
						out.Labels = map[string]string{}
					}
					out.Labels[k] = strings.Join(vals, multiZoneSeparator)
				}
			}
		}
	}
	var attrs [1]overrides.Attribute
	f, a := forwardOf(out, attrs[:0])
	f.Attributes = a
	if err := overrides.Record(out, pv, &f); err != nil {
		return nil, err
	}
	return out, nil
}

// TranslateInTreeInlineVolumeToCSI translates a pod's inline vsphereVolume to
// a PV for the driver, keeping the storage policy name. (The vSphere CSI
// driver does not support inline migrated volumes; Kubernetes still asks.)
func (p *Plugin) TranslateInTreeInlineVolumeToCSI(_ klog.Logger, vol *v1.Volume, _ string) (*v1.PersistentVolume, error) {
	if vol == nil || vol.VsphereVolume == nil {
		return nil, plugin.Invalid("Volume", "", field.Required(field.NewPath("vsphereVolume"), "an inline vSphere volume source is required"))
	}
	src := vol.VsphereVolume
	if src.VolumePath == "" {
		return nil, plugin.Invalid("Volume", vol.Name, field.Required(field.NewPath("volumes").Key(vol.Name).Child("vsphereVolume", "volumePath"), "a volume path is required"))
	}
	attrs := map[string]string{}
	if src.StoragePolicyName != "" {
		attrs[AttrStoragePolicyName] = src.StoragePolicyName
	}
	fs := v1.PersistentVolumeFilesystem
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: p.GetCSIPluginName() + "-" + src.VolumePath},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
				Driver: p.GetCSIPluginName(), VolumeHandle: CanonicalVolumePath(src.VolumePath), FSType: src.FSType, VolumeAttributes: attrs,
			}},
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			VolumeMode:  &fs,
		},
	}, nil
}

// vSAN capabilities with their inclusive ranges (-1: no upper bound).
var vsanRanges = map[string][2]int{
	"hostfailurestotolerate": {0, 3},
	"forceprovisioning":      {0, 1},
	"cachereservation":       {0, 100},
	"diskstripes":            {1, 12},
	"objectspacereservation": {0, 100},
	"iopslimit":              {0, -1},
}

var scKeys = [...]string{"cachereservation", "datastore", "diskformat", "diskstripes", "forceprovisioning", "fstype",
	"hostfailurestotolerate", "iopslimit", "objectspacereservation", "storagepolicyname"}

// Finding codes and StorageClass error reasons.
const (
	// ReasonRejectedByDriver marks StorageClass parameters the vSphere CSI
	// driver rejects in migration mode.
	ReasonRejectedByDriver = "rejected by the vSphere CSI driver in migration mode"
)

// TranslateInTreeStorageClassToCSI translates a StorageClass of the in-tree
// vSphere provisioner: keys are lower-cased, fstype becomes
// csi.storage.k8s.io/fstype, storagepolicyname is kept, datastore, diskformat
// and the vSAN capabilities get the suffix "-migrationparam", and
// csimigration=true is added. Zone and region keys of allowedTopologies move
// to the CSI keys. Unknown keys, invalid values, a non-thin disk format and
// vSAN capabilities (the driver rejects the last two in migration mode; use a
// storage policy with those capabilities instead) are errors naming the key.
func (p *Plugin) TranslateInTreeStorageClassToCSI(_ klog.Logger, sc *storage.StorageClass) (*storage.StorageClass, error) {
	if sc == nil {
		return nil, plugin.Invalid("StorageClass", "", field.Required(field.NewPath("storageClass"), "a StorageClass is required"))
	}
	fp := func() *field.Path { return field.NewPath("parameters") }
	params := make(map[string]string, len(sc.Parameters)+1)
	var given [len(scKeys)]scparams.Param
	errs := scparams.Match(given[:], sc.Parameters, scKeys[:], fp)
	firstVSAN := ""
	policy := false
	for i, g := range &given {
		if !g.Set() {
			continue
		}
		k, v := g.Key, g.Value
		lk := scKeys[i]
		switch lk {
		case "fstype":
			params["csi.storage.k8s.io/fstype"] = v
		case "storagepolicyname":
			params[AttrStoragePolicyName] = v
			policy = true
		case "datastore":
			if i := strings.LastIndexByte(v, '/'); i >= 0 && !p.opts.AllowUnsupportedParameters {
				errs = append(errs, field.Invalid(fp().Key(k), v, ReasonRejectedByDriver+": a datastore cluster path is not a datastore name, "+
					"and the driver looks the datastore up by name; name the datastore ("+strconv.Quote(v[i+1:])+") or select it with a storage policy (storagepolicyname)"))
			}
			params["datastore-migrationparam"] = v
		case "diskformat":
			errs = p.diskFormatErrors(errs, fp, k, v)
			params["diskformat-migrationparam"] = v
		default: // a vSAN capability
			errs = p.vsanErrors(errs, fp, k, lk, v)
			if firstVSAN == "" || k < firstVSAN {
				firstVSAN = k
			}
			params[lk+"-migrationparam"] = v
		}
	}
	scparams.Sort(errs)
	if policy && firstVSAN != "" {
		errs = append(errs, field.Forbidden(fp().Key(firstVSAN), "vSAN capabilities cannot be combined with storagepolicyname"))
	}
	if len(errs) > 0 {
		return nil, plugin.Invalid("StorageClass", sc.Name, errs...)
	}
	params["csimigration"] = "true"
	shallow := *sc
	shallow.Parameters, shallow.AllowedTopologies = nil, nil
	out := shallow.DeepCopy()
	out.Provisioner = p.GetCSIPluginName()
	out.Parameters = params
	if len(sc.AllowedTopologies) > 0 {
		zone, region := p.opts.Topology.zone(), p.opts.Topology.region()
		topo, err := translateAllowedTopologies(sc.AllowedTopologies, map[string]string{
			v1.LabelTopologyZone: zone, v1.LabelFailureDomainBetaZone: zone,
			v1.LabelTopologyRegion: region, v1.LabelFailureDomainBetaRegion: region,
		})
		if err != nil {
			return nil, plugin.Invalid("StorageClass", sc.Name, field.Invalid(field.NewPath("allowedTopologies"), "", err.Error()))
		}
		out.AllowedTopologies = topo
	}
	return out, nil
}

// diskFormatErrors appends to errs what is wrong with the diskformat v of
// an in-tree class (parameter k under fp): the driver accepts only thin
// (unless Options.AllowUnsupportedParameters).
func (p *Plugin) diskFormatErrors(errs field.ErrorList, fp func() *field.Path, k, v string) field.ErrorList {
	switch v {
	case "thin":
	case "zeroedthick", "eagerzeroedthick":
		if !p.opts.AllowUnsupportedParameters {
			errs = append(errs, field.Invalid(fp().Key(k), v, ReasonRejectedByDriver+": only \"thin\" is accepted; "+
				"use a storage policy with thick provisioning (storagepolicyname) instead"))
		}
	default:
		errs = append(errs, field.NotSupported(fp().Key(k), v, []string{"thin", "zeroedthick", "eagerzeroedthick"}))
	}
	return errs
}

// vsanErrors appends to errs what is wrong with the value v of an in-tree
// class's vSAN capability lk (parameter k under fp): a value out of its
// range, and that the driver accepts none (unless
// Options.AllowUnsupportedParameters).
func (p *Plugin) vsanErrors(errs field.ErrorList, fp func() *field.Path, k, lk, v string) field.ErrorList {
	r := vsanRanges[lk]
	n, err := strconv.Atoi(v)
	if err != nil || n < r[0] || (r[1] >= 0 && n > r[1]) {
		want := fmt.Sprintf("an integer from %d to %d", r[0], r[1])
		if r[1] < 0 {
			want = fmt.Sprintf("an integer of at least %d", r[0])
		}
		errs = append(errs, field.Invalid(fp().Key(k), v, "must be "+want))
	}
	if !p.opts.AllowUnsupportedParameters {
		errs = append(errs, field.Invalid(fp().Key(k), v, ReasonRejectedByDriver+": vSAN capabilities are not accepted; "+
			"create a vSAN storage policy with this capability and set storagepolicyname instead"))
	}
	return errs
}

// Finding codes reported by CheckPV.
const (
	FindingNoVolumePath      = "VSphereNoVolumePath"
	FindingNotVMDK           = "VSphereNotVMDK"
	FindingTopologyKeyUnused = "VSphereTopologyKeyMismatch"
	// FindingAccessModeRefused: the PV allows a multi-node access mode,
	// which the vSphere CSI driver reads as a request for a file share
	// (vSAN file services), not for this virtual disk.
	FindingAccessModeRefused = "VSphereAccessModeRefused"
)

// CheckPV reports hazards of a vSphere PV: no volume path, a path without
// ".vmdk" (translated with ".vmdk" appended, as in-tree resolved it), and
// topology keys that the configured driver keys do not cover.
func (p *Plugin) CheckPV(pv *v1.PersistentVolume) []plugin.Finding {
	if !p.CanSupport(pv) {
		return nil
	}
	src := pv.Spec.VsphereVolume
	if src.VolumePath == "" {
		return []plugin.Finding{{Code: FindingNoVolumePath, Severity: plugin.SeverityBlocker, Field: "spec.vsphereVolume.volumePath",
			Message: "the volume path is empty", Remedy: "fix the PV; it cannot be translated"}}
	}
	var out []plugin.Finding
	if multi := slices.DeleteFunc(slices.Clone(pv.Spec.AccessModes), func(m v1.PersistentVolumeAccessMode) bool {
		return m != v1.ReadWriteMany && m != v1.ReadOnlyMany
	}); len(multi) > 0 {
		out = append(out, plugin.Finding{Code: FindingAccessModeRefused, Severity: plugin.SeverityBlocker, Field: "spec.accessModes",
			Message: fmt.Sprintf("access modes %v: the vSphere CSI driver takes %v as a request for a vSAN file share, not for this virtual disk, which attaches to one node at a time", pv.Spec.AccessModes, multi),
			Remedy:  "re-create the PV object with accessModes [ReadWriteOnce] before migrating (reclaim policy Retain first; same name and claimRef; the disk is kept); a claim asking for " + string(multi[0]) + " must be re-created too"})
	}
	if c := CanonicalVolumePath(src.VolumePath); c != src.VolumePath {
		out = append(out, plugin.Finding{Code: FindingNotVMDK, Severity: plugin.SeverityWarning, Field: "spec.vsphereVolume.volumePath",
			Message: fmt.Sprintf("volume path %q has no .vmdk; the in-tree plugin appended it, and so does the translation: the CSI volume handle is %q (the path is kept in annotation %s)", src.VolumePath, c, AnnVolumePath),
			Remedy:  "nothing to do if the disk is " + c + "; if it is not, keep the PV in-tree and copy the data to a new volume"})
	}
	if na := pv.Spec.NodeAffinity; na != nil {
		for _, k := range []string{DefaultZoneKey, DefaultRegionKey} {
			if hasTopologyKey(na, k) && k != p.opts.Topology.zone() && k != p.opts.Topology.region() {
				out = append(out, plugin.Finding{Code: FindingTopologyKeyUnused, Severity: plugin.SeverityWarning, Field: "spec.nodeAffinity",
					Message: fmt.Sprintf("node affinity uses %q, which the configured driver topology keys (%s, %s) do not report; pods may not schedule", k, p.opts.Topology.zone(), p.opts.Topology.region()),
					Remedy:  "translate with the topology keys the driver reports, its [Labels] topology-categories", Action: plugin.ActionSetVSphereTopology})
			}
		}
	}
	return out
}

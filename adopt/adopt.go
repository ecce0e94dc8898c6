// Package adopt decides what a migrated Ceph volume becomes in Ceph CSI's
// eyes, and how: an RBD image or a CephFS subvolume registered in Ceph
// CSI's journal becomes one of the driver's own volumes (a native "0001-…"
// volume ID), which the driver stages, expands, deletes, snapshots and
// clones; an RBD image that cannot be registered keeps its migration handle
// ("mig_…"), which the driver only stages, expands and deletes; a CephFS
// path that cannot stays a static volume, which the driver only stages.
//
// It holds the rules and the journal's layout, without any Ceph client: the
// caller reads the image from Ceph (Image), and carries out the journal's
// writes (Journal.Writes) with Ceph's own tools. Facts: Ceph CSI v3.12.2,
// internal/journal/voljournal.go and internal/rbd/rbd_util.go.
package adopt

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/volumeid"
)

// Annotations an adopted PV carries, so that the undo gives back the PV it
// replaced (its migration handle and attributes) and knows the journal
// entry to remove.
const (
	// AnnAdoptedFrom records the volume handle before the adoption.
	AnnAdoptedFrom = "csimigrate.io/adopted-from-handle"
	// AnnAdoptedAttributes records, in JSON, the volume attributes before
	// the adoption.
	AnnAdoptedAttributes = "csimigrate.io/adopted-from-attributes"
	// AnnJournal records, in JSON, the journal entry the adoption wrote.
	AnnJournal = "csimigrate.io/journal"
	// AnnAdoptedCSI marks a PV adopted from a CSI PV with a migration
	// handle (not rewritten from an in-tree PV): its undo gives that CSI
	// PV back.
	AnnAdoptedCSI = "csimigrate.io/adopted-csi-pv"
)

// Form is what a migrated volume is to its CSI driver.
type Form string

// Forms.
const (
	// FormNative is a volume of the driver's own: its journal names the
	// image, its volume ID is the driver's.
	FormNative Form = "native"
	// FormMigration is a volume known by its migration handle.
	FormMigration Form = "migration-handle"
	// FormStatic is a CephFS static volume (a path): staged, nothing else.
	FormStatic Form = "static"
)

// Feature is a CSI operation the driver serves for a volume.
type Feature string

// Features.
const (
	FeatureStage    Feature = "stage"
	FeatureExpand   Feature = "expand"
	FeatureDelete   Feature = "delete"
	FeatureSnapshot Feature = "snapshot"
	FeatureClone    Feature = "clone"
	// FeaturePublish is ControllerPublishVolume (attaching the volume to a
	// node), which the vSphere CSI driver serves and Ceph CSI has no need
	// of.
	FeaturePublish Feature = "publish"
)

// FeaturesOf are the operations Ceph CSI v3.12.2 serves for an RBD volume
// of a form (for FormNative: with or without the image's layering feature).
func FeaturesOf(f Form, layering bool) []Feature {
	switch {
	case f == FormNative && layering:
		return []Feature{FeatureStage, FeatureExpand, FeatureDelete, FeatureSnapshot, FeatureClone}
	case f == FormNative, f == FormMigration:
		return []Feature{FeatureStage, FeatureExpand, FeatureDelete}
	case f == FormStatic:
		return []Feature{FeatureStage}
	}
	return nil
}

// Image is what Ceph says of an RBD image (`rbd info --format json`, the
// pool's ID from `ceph osd pool ls detail`).
type Image struct {
	Pool      string
	PoolID    int64
	Namespace string
	Name      string
	// ID is the image's id (`rbd info` "id"); format 1 images have none.
	ID       string
	Format   int
	Features []string
}

// HasLayering reports whether the image has the layering feature, which
// snapshots and clones need.
func (im Image) HasLayering() bool { return slices.Contains(im.Features, "layering") }

// DefaultInstance is Ceph CSI's default --instanceid, which names its
// journal's directory object.
const DefaultInstance = "default"

// Journal is the entry of Ceph CSI's volume journal that makes an image one
// of its volumes: the object csi.volume.<UUID> with the image's name, the
// request (PV) name and the image's id, and the directory key
// csi.volume.<VolName> in csi.volumes.<Instance> naming UUID. Both live in
// the image's pool, in the cluster entry's RADOS namespace.
type Journal struct {
	Pool      string `json:"pool"`
	Namespace string `json:"namespace,omitempty"`
	Instance  string `json:"instance,omitempty"`
	UUID      string `json:"uuid"`
	ImageName string `json:"imageName"`
	ImageID   string `json:"imageID,omitempty"`
	VolName   string `json:"volName"`
}

// Object is the journal's per-volume object.
func (j Journal) Object() string { return "csi.volume." + j.UUID }

// Directory is the journal's directory object.
func (j Journal) Directory() string {
	inst := j.Instance
	if inst == "" {
		inst = DefaultInstance
	}
	return "csi.volumes." + inst
}

// DirectoryKey is the key of the directory object that names UUID.
func (j Journal) DirectoryKey() string { return "csi.volume." + j.VolName }

// Keys are the per-volume object's omap keys and values (csi.imageid for
// an RBD image only: a CephFS subvolume has none).
func (j Journal) Keys() map[string]string {
	keys := map[string]string{"csi.imagename": j.ImageName, "csi.volname": j.VolName}
	if j.ImageID != "" {
		keys["csi.imageid"] = j.ImageID
	}
	return keys
}

// Op is one write to RADOS, in the words of the rados tool.
type Op struct {
	// Verb is "create" (exclusive), "setomapval", "rmomapkey" or "rm".
	Verb   string
	Object string
	Key    string
	Value  string
}

// Args are the rados tool's arguments for the op (after the pool and
// namespace options).
func (o Op) Args() []string {
	switch o.Verb {
	case "setomapval":
		return []string{o.Verb, o.Object, o.Key, o.Value}
	case "rmomapkey":
		return []string{o.Verb, o.Object, o.Key}
	}
	return []string{o.Verb, o.Object}
}

// Writes are the journal's writes in Ceph CSI's own order: the exclusive
// create of the per-volume object (it fails if the object exists), its
// keys, then the directory key.
func (j Journal) Writes() []Op {
	ops := []Op{{Verb: "create", Object: j.Object()}}
	keys := j.Keys()
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		ops = append(ops, Op{Verb: "setomapval", Object: j.Object(), Key: k, Value: keys[k]})
	}
	return append(ops, Op{Verb: "setomapval", Object: j.Directory(), Key: j.DirectoryKey(), Value: j.UUID})
}

// Removals undo Writes: the directory key, then the per-volume object.
func (j Journal) Removals() []Op {
	return []Op{{Verb: "rmomapkey", Object: j.Directory(), Key: j.DirectoryKey()}, {Verb: "rm", Object: j.Object()}}
}

// Matches reports why the omap values read back from the per-volume
// object and the directory do not hold what the entry wrote ("" when they
// do).
func (j Journal) Matches(object, directory map[string]string) string {
	var diffs []string
	keys := j.Keys()
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if object[k] != keys[k] {
			diffs = append(diffs, fmt.Sprintf("%s %s is %q, want %q", j.Object(), k, object[k], keys[k]))
		}
	}
	for k := range object {
		if _, ok := keys[k]; !ok && k != "csi.volume.owner" {
			// Encryption or another feature's key: not an entry we wrote.
			diffs = append(diffs, fmt.Sprintf("%s has key %s, which the adoption does not write", j.Object(), k))
		}
	}
	if directory[j.DirectoryKey()] != j.UUID {
		diffs = append(diffs, fmt.Sprintf("%s %s is %q, want %q", j.Directory(), j.DirectoryKey(), directory[j.DirectoryKey()], j.UUID))
	}
	return strings.Join(diffs, "; ")
}

// ErrNotAdoptable is wrapped by the errors of RBD for input that is not a
// migrated RBD volume at all.
var ErrNotAdoptable = errors.New("not an adoptable RBD volume")

// RBDInput is what the adoption of one RBD volume is decided from.
type RBDInput struct {
	// PV is the CSI PV with a migration handle: the rewrite's replacement
	// of an in-tree PV, or a live CSI PV an earlier run or Kubernetes'
	// own migration wrote. It is not modified.
	PV *v1.PersistentVolume
	// Image is what Ceph says of the image; nil when Ceph was not read
	// (the decision is then a prediction from ClassFeatures).
	Image *Image
	// ClassFeatures are the imageFeatures parameter of the in-tree class
	// that provisioned the image ("" is the in-tree provisioner's default:
	// none); nil when unknown (a static image, a class not read).
	ClassFeatures *string
	// ClusterID is the clusterID the native volume ID names: the driver's
	// deployment's own entry for the image's cluster (JoinDeployment); ""
	// names the migration handle's.
	ClusterID string
	// RadosNamespace is the rbd.radosNamespace of the cluster entry the
	// volume ID names.
	RadosNamespace string
	// ReferencedBy names the other PVs that reference the same image.
	ReferencedBy []string
	// UUID is the journal uuid for an image whose name does not end in a
	// UUID (the caller draws one and keeps it); ignored otherwise.
	UUID string
	// FormOnly decides the form alone, as a plan does before the run: the
	// UUID the run would draw is not needed, and no volume ID, journal
	// entry or PV is built.
	FormOnly bool
	// Instance is Ceph CSI's --instanceid; "" means DefaultInstance.
	Instance string
}

// Decision is what a Ceph volume becomes.
type Decision struct {
	Form     Form
	Features []Feature
	// Why says why the form or the features are less than a native
	// volume with snapshots and clones; one line each.
	Why []string
	// KeepRetain says why the adopted PV must keep reclaim policy Retain
	// ("" when Ceph CSI's delete removes exactly this image and its
	// journal).
	KeepRetain string
	// Predicted: Ceph was not read; Form and Features are what the PV's
	// attributes promise, to be confirmed against the image.
	Predicted bool
	// For FormNative with Ceph read: the volume ID, the journal entry to
	// write, and the adopted PV (a copy of the input with the native
	// handle, its attributes, and what the undo needs recorded).
	VolumeID volumeid.CephCSIVolumeID
	Journal  Journal
	PV       *v1.PersistentVolume
	// Subvolume is the CephFS subvolume's group and name ("" for RBD, or a
	// path that names none).
	Group, Subvolume string
	// native are notes on what the native form would serve (layering, a
	// prediction), which join Why only when the form is native.
	native []string
}

// settle joins the notes on the native form to Why when that is the form.
func (d *Decision) settle() {
	if d.Form == FormNative {
		d.Why = append(d.Why, d.native...)
	}
	d.native = nil
}

// suffixUUID is the image name's last 36 characters when they are a UUID.
func suffixUUID(name string) (string, bool) {
	if len(name) < 36 {
		return "", false
	}
	s := name[len(name)-36:]
	id := volumeid.CephCSIVolumeID{Version: 1, ClusterID: "x", ObjectUUID: s}
	return s, id.Validate() == nil
}

// RBD decides what a migrated RBD volume becomes. An error (wrapping
// ErrNotAdoptable) means the input is not a CSI PV of rbd.csi.ceph.com with
// a migration handle.
func RBD(in RBDInput) (Decision, error) {
	pv := in.PV
	if pv == nil || pv.Spec.CSI == nil || plugin.InTreeNameOfDriver(pv.Spec.CSI.Driver) != plugin.RBDInTreePluginName {
		return Decision{}, fmt.Errorf("%w: want a CSI PV of %s", ErrNotAdoptable, plugin.RBDDriverName)
	}
	if pv.Name == "" {
		return Decision{}, fmt.Errorf("%w: metadata.name is empty: the journal names the volume by its PV's name", ErrNotAdoptable)
	}
	h, err := rbdImageOf(pv, in.ClusterID)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Form: FormNative}
	// The clusterID must fit in a Ceph CSI volume ID (at most 64 bytes),
	// which a plan's form decides as the run does.
	if err := (volumeid.CephCSIVolumeID{Version: 1, ClusterID: h.ClusterID, ObjectUUID: "00000000-0000-4000-8000-000000000000"}).Validate(); err != nil {
		d.stay(FormMigration, fmt.Sprintf("a Ceph CSI volume ID cannot name the clusterID %q: %v", h.ClusterID, err))
	}
	if in.RadosNamespace != "" {
		d.stay(FormMigration, fmt.Sprintf("the Ceph CSI cluster entry %s has RBD rados namespace %q, which the image's migration handle does not name", h.ClusterID, in.RadosNamespace))
	}
	if len(in.ReferencedBy) > 0 {
		d.stay(FormMigration, fmt.Sprintf("PVs %s reference the same image: deleting either would destroy it", strings.Join(in.ReferencedBy, ", ")))
	}
	uuid, named := suffixUUID(h.Image)
	if !named {
		d.KeepRetain = fmt.Sprintf("image %s/%s does not end in a UUID, and Ceph CSI's delete derives the journal's uuid from the name: it would remove another entry or fail, so the PV keeps reclaim policy Retain", h.Pool, h.Image)
		uuid = in.UUID
	}
	layering, err := d.judgeImage(h, in)
	if err != nil {
		return Decision{}, err
	}
	if d.Form == FormNative && !named && uuid == "" && !in.FormOnly {
		return Decision{}, errors.New("adopt: an image whose name does not end in a UUID needs RBDInput.UUID")
	}
	return d.finish(layering, in.FormOnly, func() (volumeid.CephCSIVolumeID, Journal) {
		return volumeid.CephCSIVolumeID{Version: 1, ClusterID: h.ClusterID, Location: in.Image.PoolID, ObjectUUID: uuid},
			Journal{Pool: h.Pool, Instance: in.Instance, UUID: uuid, ImageName: h.Image, ImageID: in.Image.ID, VolName: pv.Name}
	}, func(d Decision) (*v1.PersistentVolume, error) { return adoptedPV(pv, d, in.Image) })
}

// finish ends a decision once its form is judged: its features (full:
// snapshots and clones too) and the notes on the native form; for a native
// volume the run adopts (Ceph read, not formOnly), the volume ID and
// journal entry native gives, and the PV build makes of them.
func (d Decision) finish(full, formOnly bool, native func() (volumeid.CephCSIVolumeID, Journal), build func(Decision) (*v1.PersistentVolume, error)) (Decision, error) {
	d.Features = FeaturesOf(d.Form, full)
	d.settle()
	if d.Form != FormNative {
		d.KeepRetain = ""
		return d, nil
	}
	if d.Predicted || formOnly {
		return d, nil
	}
	d.VolumeID, d.Journal = native()
	if err := d.VolumeID.Validate(); err != nil {
		return Decision{}, fmt.Errorf("the native volume ID: %w", err)
	}
	out, err := build(d)
	if err != nil {
		return Decision{}, err
	}
	d.PV = out
	return d, nil
}

// rbdImageOf is the image an RBD PV names, and the clusterID its native
// volume ID will name (clusterID when set, else the migration handle's).
// The image is the one the attributes name (the in-tree source's, as the
// translation wrote them); the migration handle may resolve to another (the
// hazard that keeps such PVs Retain), which the journal does not inherit:
// it names the image by name.
func rbdImageOf(pv *v1.PersistentVolume, clusterID string) (volumeid.RBDHandle, error) {
	attrs := pv.Spec.CSI.VolumeAttributes
	h, err := volumeid.CephCSIReadRBDHandle(pv.Spec.CSI.VolumeHandle)
	if err != nil && (attrs["imageName"] == "" || attrs["clusterID"] == "") {
		return h, fmt.Errorf("%w: spec.csi.volumeHandle %q: %v, and no imageName and clusterID attributes", ErrNotAdoptable, pv.Spec.CSI.VolumeHandle, err)
	}
	// A handle Ceph CSI cannot parse is no obstacle: the adoption replaces
	// it.
	if img := attrs["imageName"]; img != "" {
		h.Image = img
		h.Pool = attrs["pool"]
	}
	h.Pool = volumeid.RBDPool(h.Pool) // the in-tree source's default, as the API server sets it
	if id := attrs["clusterID"]; id != "" {
		h.ClusterID = id
	}
	if clusterID != "" {
		h.ClusterID = clusterID
	}
	return h, nil
}

// stay keeps the volume in form (less than native), for why.
func (d *Decision) stay(form Form, why string) { d.Form = form; d.Why = append(d.Why, why) }

// judgeImage judges the image h names by what Ceph says of it (in.Image),
// or predicts from its class's features when Ceph was not read; it returns
// whether the image has layering (snapshots and clones).
func (d *Decision) judgeImage(h volumeid.RBDHandle, in RBDInput) (bool, error) {
	if in.Image == nil {
		d.Predicted = true
		switch {
		case in.ClassFeatures == nil:
			d.native = append(d.native, "the image's features are not known without reading Ceph: snapshots and clones only if it has layering")
		case slices.Contains(strings.Split(*in.ClassFeatures, ","), "layering"):
			return true, nil
		default:
			d.native = append(d.native, fmt.Sprintf("its class's imageFeatures (%q; the in-tree provisioner's default is none) lack layering: no snapshots or clones (layering cannot be added to an existing image)", *in.ClassFeatures))
		}
		return false, nil
	}
	im := in.Image
	switch {
	case im.Name != h.Image || im.Pool != h.Pool:
		return false, fmt.Errorf("%w: the image read is %s/%s, the handle names %s/%s", ErrNotAdoptable, im.Pool, im.Name, h.Pool, h.Image)
	case im.Format != 2:
		d.stay(FormMigration, fmt.Sprintf("image %s/%s is format %d: Ceph CSI serves only format 2 images as its own", h.Pool, h.Image, im.Format))
	case im.ID == "":
		d.stay(FormMigration, fmt.Sprintf("image %s/%s has no id", h.Pool, h.Image))
	case im.Namespace != "":
		d.stay(FormMigration, fmt.Sprintf("image %s/%s is in rados namespace %q", h.Pool, h.Image, im.Namespace))
	}
	layering := im.HasLayering()
	if !layering {
		d.native = append(d.native, fmt.Sprintf("image %s/%s lacks the layering feature (%s): no snapshots or clones (it cannot be added to an existing image)", h.Pool, h.Image, strings.Join(im.Features, ",")))
	}
	return layering, nil
}

// adoptedPV is pv with the native handle and attributes, and what the undo
// needs recorded.
func adoptedPV(pv *v1.PersistentVolume, d Decision, im *Image) (*v1.PersistentVolume, error) {
	out := pv.DeepCopy()
	src := out.Spec.CSI
	prevAttrs, err := json.Marshal(pv.Spec.CSI.VolumeAttributes)
	if err != nil {
		return nil, err
	}
	journal, err := json.Marshal(d.Journal)
	if err != nil {
		return nil, err
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[AnnAdoptedFrom] = pv.Spec.CSI.VolumeHandle
	out.Annotations[AnnAdoptedAttributes] = string(prevAttrs)
	out.Annotations[AnnJournal] = string(journal)
	src.VolumeHandle = d.VolumeID.String()
	attrs := maps.Clone(src.VolumeAttributes)
	if attrs == nil {
		attrs = map[string]string{}
	}
	// What marks a migrated or static volume goes: Ceph CSI then resolves
	// the volume through its journal, as its own.
	for _, k := range []string{"migration", "staticVolume", "tryOtherMounters", "imageFormat"} {
		delete(attrs, k)
	}
	attrs["clusterID"] = d.VolumeID.ClusterID
	attrs["pool"] = d.Journal.Pool
	attrs["imageName"] = d.Journal.ImageName
	attrs["imageFeatures"] = strings.Join(im.Features, ",")
	if attrs["journalPool"] == "" {
		delete(attrs, "journalPool")
	}
	src.VolumeAttributes = attrs
	return out, nil
}

// JournalOf is the entry in Ceph CSI's journal that pv's adoption wrote,
// which its undo removes; ok is false for a PV without one (not adopted, or
// an adopted vSphere PV, whose disk stays registered). err is a record that
// does not parse. pv is not modified.
func JournalOf(pv *v1.PersistentVolume) (j Journal, ok bool, err error) {
	if pv == nil || pv.Annotations[AnnJournal] == "" {
		return Journal{}, false, nil
	}
	j, err = journalOf(pv)
	return j, err == nil, err
}

// journalOf parses pv's AnnJournal.
func journalOf(pv *v1.PersistentVolume) (Journal, error) {
	var j Journal
	if err := json.Unmarshal([]byte(pv.Annotations[AnnJournal]), &j); err != nil {
		return Journal{}, fmt.Errorf("annotation %s: %w", AnnJournal, err)
	}
	if j.UUID == "" || j.Pool == "" || j.VolName == "" {
		return Journal{}, fmt.Errorf("annotation %s: the journal entry lacks its uuid, pool or volume name", AnnJournal)
	}
	return j, nil
}

// Unadopted is the PV an adopted PV replaced: its migration handle and
// attributes back, the adoption's annotations gone, and the journal entry
// the adoption wrote (to remove; none for a vSphere PV, whose disk stays
// registered: the driver's syncer registers every migrated disk). ok is false for a PV that was not
// adopted. pv is not modified.
func Unadopted(pv *v1.PersistentVolume) (prev *v1.PersistentVolume, j Journal, ok bool, err error) {
	if pv == nil || pv.Spec.CSI == nil {
		return nil, Journal{}, false, nil
	}
	handle, has := pv.Annotations[AnnAdoptedFrom]
	if !has {
		return nil, Journal{}, false, nil
	}
	if _, vs := pv.Annotations[AnnVSphereDisk]; vs {
		prev, err := unadoptedVSphere(pv)
		return prev, Journal{}, true, err
	}
	var attrs map[string]string
	if err := json.Unmarshal([]byte(pv.Annotations[AnnAdoptedAttributes]), &attrs); err != nil {
		return nil, Journal{}, true, fmt.Errorf("annotation %s: %w", AnnAdoptedAttributes, err)
	}
	if j, err = journalOf(pv); err != nil {
		return nil, Journal{}, true, err
	}
	prev = pv.DeepCopy()
	prev.Spec.CSI.VolumeHandle = handle
	prev.Spec.CSI.VolumeAttributes = attrs
	if err := unadoptPrevious(prev); err != nil {
		return nil, Journal{}, true, err
	}
	for _, k := range []string{AnnAdoptedFrom, AnnAdoptedAttributes, AnnJournal, AnnAdoptedCSI} {
		delete(prev.Annotations, k)
	}
	if len(prev.Annotations) == 0 {
		prev.Annotations = nil
	}
	return prev, j, true, nil
}

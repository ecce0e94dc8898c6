package adopt

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/plugin"
)

// AnnVSphereDisk records, in JSON (VSphereDisk), the disk an adopted
// vSphere PV was registered from: its datastore path and its First Class
// Disk ID.
const AnnVSphereDisk = "csimigrate.io/vsphere-disk"

// VSphereDisk is a vSphere disk as the adoption registered it.
type VSphereDisk struct {
	// Path is the datastore path "[datastore] dir/disk.vmdk" (the
	// migration handle).
	Path string `json:"path"`
	// FCD is its First Class Disk ID, also its CNS volume ID: the handle
	// the vSphere CSI driver gives its own volumes.
	FCD string `json:"fcd"`
}

// VSphereFeatures are the operations the vSphere CSI driver v3.7.0 serves
// for a vSphere volume of a form (measured in vspheretest): a datastore
// path handle only through its migration mapping, without snapshots; a
// First Class Disk ID handle as its own volume.
func VSphereFeatures(f Form) []Feature {
	switch f {
	case FormNative:
		return []Feature{FeaturePublish, FeatureExpand, FeatureDelete, FeatureSnapshot}
	case FormMigration:
		return []Feature{FeaturePublish, FeatureExpand, FeatureDelete}
	}
	return nil
}

// VSphereAttrType is the volume attribute the vSphere CSI driver gives its
// own block volumes.
const VSphereAttrType = "vSphere CNS Block Volume"

// VSphereInput is what the adoption of one vSphere volume is decided from.
type VSphereInput struct {
	// PV is the CSI PV of csi.vsphere.vmware.com with its datastore path
	// as handle (the rewrite's replacement of an in-tree PV). It is not
	// modified.
	PV *v1.PersistentVolume
	// FCD is the disk's First Class Disk ID where vCenter has it
	// registered as one and as a CNS volume; "" before (the decision is
	// then a prediction: the adoption registers it first).
	FCD string
	// ReferencedBy names the other PVs that name the same disk.
	ReferencedBy []string
}

// VSphere decides what a migrated vSphere volume becomes: native (its
// First Class Disk ID as handle; publish, expand, delete and snapshot) or,
// where another PV names the same disk, its migration handle. An error
// (wrapping ErrNotAdoptable) means the input is not a CSI PV of the
// vSphere driver with a datastore path handle.
func VSphere(in VSphereInput) (Decision, error) {
	pv := in.PV
	if pv == nil || pv.Spec.CSI == nil || plugin.InTreeNameOfDriver(pv.Spec.CSI.Driver) != plugin.VSphereInTreePluginName {
		return Decision{}, fmt.Errorf("%w: want a CSI PV of %s", ErrNotAdoptable, plugin.VSphereDriverName)
	}
	path := pv.Spec.CSI.VolumeHandle
	if !strings.HasPrefix(path, "[") || !strings.HasSuffix(path, ".vmdk") {
		return Decision{}, fmt.Errorf("%w: spec.csi.volumeHandle %q is not a datastore path \"[datastore] dir/disk.vmdk\"", ErrNotAdoptable, path)
	}
	d := Decision{Form: FormNative}
	if len(in.ReferencedBy) > 0 {
		d.Form = FormMigration
		d.Why = append(d.Why, fmt.Sprintf("PVs %s name the same disk: deleting either would destroy it", strings.Join(in.ReferencedBy, ", ")))
	}
	d.Features = VSphereFeatures(d.Form)
	if d.Form != FormNative {
		return d, nil
	}
	if in.FCD == "" {
		d.Predicted = true
		return d, nil
	}
	out := pv.DeepCopy()
	prevAttrs, err := json.Marshal(pv.Spec.CSI.VolumeAttributes)
	if err != nil {
		return Decision{}, err
	}
	disk, err := json.Marshal(VSphereDisk{Path: path, FCD: in.FCD})
	if err != nil {
		return Decision{}, err
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[AnnAdoptedFrom] = path
	out.Annotations[AnnAdoptedAttributes] = string(prevAttrs)
	out.Annotations[AnnVSphereDisk] = string(disk)
	out.Spec.CSI.VolumeHandle = in.FCD
	attrs := maps.Clone(out.Spec.CSI.VolumeAttributes)
	if attrs == nil {
		attrs = map[string]string{}
	}
	attrs["type"] = VSphereAttrType
	out.Spec.CSI.VolumeAttributes = attrs
	d.PV = out
	return d, nil
}

// VSphereDiskOf is the disk an adopted vSphere PV records; ok is false for
// another PV.
func VSphereDiskOf(pv *v1.PersistentVolume) (disk VSphereDisk, ok bool, err error) {
	if pv == nil {
		return VSphereDisk{}, false, nil
	}
	raw, ok := pv.Annotations[AnnVSphereDisk]
	if !ok {
		return VSphereDisk{}, false, nil
	}
	if err := json.Unmarshal([]byte(raw), &disk); err != nil {
		return VSphereDisk{}, true, fmt.Errorf("annotation %s: %w", AnnVSphereDisk, err)
	}
	if disk.Path == "" || disk.FCD == "" {
		return VSphereDisk{}, true, fmt.Errorf("annotation %s: the disk lacks its path or First Class Disk ID", AnnVSphereDisk)
	}
	return disk, true, nil
}

// unadoptedVSphere is Unadopted for a vSphere PV: its datastore path handle
// and attributes back, the adoption's annotations gone.
func unadoptedVSphere(pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	disk, _, err := VSphereDiskOf(pv)
	if err != nil {
		return nil, err
	}
	var attrs map[string]string
	if err := json.Unmarshal([]byte(pv.Annotations[AnnAdoptedAttributes]), &attrs); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", AnnAdoptedAttributes, err)
	}
	if from := pv.Annotations[AnnAdoptedFrom]; from != disk.Path {
		return nil, fmt.Errorf("annotation %s is %q, annotation %s names disk %q", AnnAdoptedFrom, from, AnnVSphereDisk, disk.Path)
	}
	prev := pv.DeepCopy()
	prev.Spec.CSI.VolumeHandle = disk.Path
	prev.Spec.CSI.VolumeAttributes = attrs
	for _, k := range []string{AnnAdoptedFrom, AnnAdoptedAttributes, AnnVSphereDisk, AnnAdoptedCSI} {
		delete(prev.Annotations, k)
	}
	if len(prev.Annotations) == 0 {
		prev.Annotations = nil
	}
	return prev, nil
}

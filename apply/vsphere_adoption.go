package apply

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
	"github.com/csimigrate/csimigrate/rewrite"
)

// VSphere is what the adoption of vSphere volumes reads from vCenter and
// writes to it (package vcenter, with govmomi).
type VSphere interface {
	// FirstClassDisk reads the disk of a datastore path: its First Class
	// Disk ID ("" when it is not one) and whether CNS has a volume of that
	// ID. An error says the disk cannot be read (or does not exist).
	FirstClassDisk(ctx context.Context, path string) (fcd string, cns bool, err error)
	// RegisterDisk makes the disk of a datastore path a First Class Disk
	// where it is not one, and a CNS volume (with the storage policy of
	// that name; "" none) where CNS has none, as the vSphere CSI driver's
	// syncer registers a migrated disk, and returns its ID. name names the
	// new CNS volume. Registering a registered disk changes nothing.
	RegisterDisk(ctx context.Context, path, name, policy string) (string, error)
}

// vsphereDisk is what the checks read of an in-tree vSphere PV's disk for
// its adoption.
type vsphereDisk struct {
	path, policy string
	// fcd is the disk's First Class Disk ID ("" before registration), cns
	// whether CNS has its volume.
	fcd string
	cns bool
}

// registered is the disk's ID once it is a First Class Disk and a CNS
// volume ("" before).
func (d *vsphereDisk) registered() string {
	if d.cns {
		return d.fcd
	}
	return ""
}

// isVSphere reports whether a CSI PV is the vSphere CSI driver's.
func isVSphere(pv *v1.PersistentVolume) bool {
	return pv != nil && pv.Spec.CSI != nil && plugin.InTreeNameOfDriver(pv.Spec.CSI.Driver) == plugin.VSphereInTreePluginName
}

// vsphereAdoptionOf reads what the adoption of an in-tree vSphere PV's disk
// depends on (the disk in vCenter, the PVs naming the same disk) and
// decides. repl is the rewrite's replacement with the datastore path
// handle. A disk that cannot be adopted keeps that handle, and why is said.
func (a *Writer) vsphereAdoptionOf(ctx context.Context, cur, repl *v1.PersistentVolume, inUse bool) (*adoption, error) {
	path := repl.Spec.CSI.VolumeHandle
	fcd, cns, err := a.o.VSphere.FirstClassDisk(ctx, path)
	if err != nil {
		return nil, &rewrite.Refusal{Code: rewrite.CodeNotAdoptable, Reason: fmt.Sprintf("reading disk %s from vCenter: %v", path, err),
			Remedy: "make the disk's datastore and file exist in vCenter under that path (the plan's vCenter checks say what vCenter has), or rewrite the PV without adoption"}
	}
	ad := &adoption{disk: &vsphereDisk{path: path, policy: repl.Spec.CSI.VolumeAttributes[vsphere.AttrStoragePolicyName], fcd: fcd, cns: cns}}
	if ad.refs, err = a.sharers(ctx, cur); err != nil {
		return nil, err
	}
	d, err := a.decide(repl, ad)
	if err != nil {
		return nil, err
	}
	switch {
	case d.Form != adopt.FormNative:
		ad.why = strings.Join(d.Why, "; ")
	case inUse:
		ad.why = "pods use it: adoption changes the volume handle the kubelet tracks; it is rewritten with its datastore path now (the driver publishes, expands and deletes it, and does not snapshot it)"
	}
	return ad, nil
}

// vsphereSummary says what the adoption makes of a vSphere volume.
func (ad *adoption) vsphereSummary() string {
	switch {
	case ad.why != "":
		return "keeps its datastore path as handle (publish, expand, delete; no snapshots): not adopted: " + ad.why
	case ad.disk.registered() == "":
		return "its disk is registered as a First Class Disk and CNS volume (as the vSphere CSI driver's syncer does), then the PV is adopted as one of the driver's own volumes, by that ID (publish, expand, delete, snapshot)"
	}
	return "adopted as one of the vSphere CSI driver's own volumes, by its First Class Disk ID " + ad.disk.fcd + " (publish, expand, delete, snapshot)"
}

// needsRegistration: the adoption registers the disk before the replacement
// is saved (its handle is the ID registration gives).
func (c *checkedPV) needsRegistration() bool {
	return c != nil && c.adoption != nil && c.adoption.disk != nil && c.adoption.why == "" && c.adoption.disk.registered() == ""
}

// Step 2 (a vSphere volume adopted): the disk registered as a First Class
// Disk and CNS volume before the replacement, whose handle is its ID, is
// saved.

// registering: the run adopts the live in-tree vSphere PV and has not
// saved its replacement yet.
func (r *pvRun) registering() bool {
	return !r.dir.IsUndo() && r.a.o.VSphere != nil && r.isSource() && r.state == nil && r.cur.Spec.VsphereVolume != nil
}

// observeDisk runs the checks (once per uid) on an in-tree vSphere PV the
// run adopts, before its replacement is saved: they read its disk from
// vCenter, and whether it must be registered is the register step's done.
// A resumed run finds a disk it registered before registered.
func (r *pvRun) observeDisk(ctx context.Context) error {
	if !r.registering() {
		return nil
	}
	return r.checkFirst(ctx)
}

func (r *pvRun) diskRegistered() bool {
	return !r.registering() || !r.checked.needsRegistration()
}

func (r *pvRun) sayRegister() string {
	return "register disk " + r.checked.adoption.disk.path + " as a First Class Disk and CNS volume in vCenter (as the vSphere CSI driver's syncer does)"
}

func (r *pvRun) registerDisk(ctx context.Context) error {
	d := r.checked.adoption.disk
	id, err := r.a.o.VSphere.RegisterDisk(ctx, d.path, r.cur.Name, d.policy)
	if err != nil {
		return fmt.Errorf("registering disk %s: %w", d.path, err)
	}
	d.fcd, d.cns = id, true
	return nil
}

// verifyVSphereAdoption checks, before an adopted vSphere PV gets its
// reclaim policy back, that vCenter has its handle as the First Class Disk
// and CNS volume of the disk it records.
func (a *Writer) verifyVSphereAdoption(ctx context.Context, pv *v1.PersistentVolume, disk adopt.VSphereDisk) error {
	if a.o.VSphere == nil {
		return &rewrite.Refusal{Code: rewrite.CodeNotRecorded, Reason: "the PV's disk was adopted, and no vCenter access was given to verify it",
			Remedy: "give the run the vSphere CSI driver's configuration"}
	}
	fcd, cns, err := a.o.VSphere.FirstClassDisk(ctx, disk.Path)
	switch {
	case err != nil:
		return fmt.Errorf("disk %s: %w", disk.Path, err)
	case fcd != disk.FCD || fcd != pv.Spec.CSI.VolumeHandle:
		return fmt.Errorf("disk %s is First Class Disk %q, the PV names %q", disk.Path, fcd, pv.Spec.CSI.VolumeHandle)
	case !cns:
		return fmt.Errorf("CNS has no volume %s", fcd)
	}
	return nil
}

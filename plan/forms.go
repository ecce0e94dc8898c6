package plan

import (
	"strings"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/plugins/cephfs"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/volumeid"
	v1 "k8s.io/api/core/v1"
)

// form predicts what a migrated Ceph volume will be to Ceph CSI: an RBD
// image from its class's imageFeatures (the in-tree provisioner's default
// is none: no layering), a CephFS volume static.
func (p *Planner) form(vp *VolumePlan, pv, out *v1.PersistentVolume) {
	switch {
	case pv.Spec.RBD != nil:
		var features *string
		if sc, ok := p.classes.byName[pv.Spec.StorageClassName]; ok && sc != nil && pv.Spec.StorageClassName != "" {
			f := ""
			for k, v := range rewrite.InTreeClass(sc).Parameters {
				if strings.EqualFold(k, "imageFeatures") {
					f = v
				}
			}
			features = &f
		}
		in := adopt.RBDInput{PV: out, ClassFeatures: features, FormOnly: true}
		var readErr error
		if p.ceph.readImage != nil {
			pool := volumeid.RBDPool(pv.Spec.RBD.RBDPool)
			in.Image, readErr = p.ceph.readImage(pool, pv.Spec.RBD.RBDImage)
		}
		d, ok := p.decideForm(vp, pv, deciding(func(refs []string) (adopt.Decision, error) {
			in := in
			in.ReferencedBy = refs
			return adopt.RBD(in)
		}, "image", readErr))
		if !ok {
			return
		}
		if d.KeepRetain != "" {
			vp.FormWhy = append(vp.FormWhy, d.KeepRetain)
		}
		if d.Predicted {
			vp.FormWhy = append(vp.FormWhy, "when adopted (the adoption reads the image first); otherwise the migration handle: stage, expand, delete")
		} else {
			vp.FormWhy = append(vp.FormWhy, "when adopted (the image as Ceph reports it now); otherwise the migration handle: stage, expand, delete")
		}
	case pv.Spec.CephFS != nil && out.Spec.CSI != nil:
		p.cephFSForm(vp, pv, out)
	case pv.Spec.VsphereVolume != nil && out.Spec.CSI != nil:
		if _, ok := p.decideForm(vp, pv, func(refs []string) (adopt.Decision, error) {
			return adopt.VSphere(adopt.VSphereInput{PV: out, ReferencedBy: refs})
		}); !ok {
			return
		}
		vp.FormWhy = []string{vSphereNativeWhy}
		if p.opts.VCenter != nil {
			blockers, why := p.vsphereDisk("spec.vsphereVolume", pv.Spec.VsphereVolume)
			vp.Findings = append(vp.Findings, blockers...)
			vp.FormWhy = append(vp.FormWhy, why...)
		}
	}
}

// A decider decides a volume's form by package adopt's rules, given the
// other PVs that name the same volume.
type decider func(referencedBy []string) (adopt.Decision, error)

// deciding is rule with what reading Ceph's what (the image, the
// subvolume) failed with, if it did, first among the reasons.
func deciding(rule decider, what string, readErr error) decider {
	return func(referencedBy []string) (adopt.Decision, error) {
		d, err := rule(referencedBy)
		if readErr != nil {
			d.Why = append([]string{"reading the " + what + " from Ceph: " + readErr.Error()}, d.Why...)
		}
		return d, err
	}
}

// decideForm gives vp the form decide decides alone, and records pv's
// volume for shareImages; ok is false when the rules do not apply.
func (p *Planner) decideForm(vp *VolumePlan, pv *v1.PersistentVolume, decide decider) (adopt.Decision, bool) {
	d, err := decide(nil)
	if err != nil {
		return adopt.Decision{}, false
	}
	vp.Form, vp.Features, vp.FormWhy = string(d.Form), featureNames(d.Features), d.Why
	p.sameVolume(pv, decide)
	return d, true
}

// featureNames are features as strings.
func featureNames(fs []adopt.Feature) []string {
	var s []string
	for _, f := range fs {
		s = append(s, string(f))
	}
	return s
}

// What the vSphere CSI driver v3.7.0 serves for a vSphere volume (measured
// in vspheretest): by its First Class Disk ID, as its own volume (the form
// rewrite -apply -adopt gives it), publish, expand, delete and snapshot; by
// its datastore path, only through its migration mapping, and no snapshot.
const vSphereNativeWhy = "when adopted (the adoption registers the disk as a First Class Disk and CNS volume where it is not one, as the driver's syncer does, " +
	"and gives the PV that ID as handle); otherwise the migration handle, its datastore path, which the driver serves only through its migration mapping " +
	"(CnsVSphereVolumeMigration): publish, expand, delete, and no snapshot"

// cephFSForm predicts what a migrated CephFS volume becomes: native where
// its path is /volumes/<group>/<name> (and, with CephFSSubvolume, Ceph's
// volumes module serves it), with the cluster entry of its group added to
// the config map the plan prints; static otherwise.
func (p *Planner) cephFSForm(vp *VolumePlan, pv, out *v1.PersistentVolume) {
	attrs := out.Spec.CSI.VolumeAttributes
	// The form when adopted with the admin Secret, which the plan cannot
	// know will be given: the rules decide the form alone.
	in := adopt.CephFSInput{PV: out, FormOnly: true}
	var readErr error
	if group, name, ok := adopt.SubvolumeOf(attrs["rootPath"]); ok {
		e := ceph.CephFSGroupEntry(ceph.EntryFor(pv.Spec.CephFS.Monitors), group)
		p.ceph.clusters[e.ClusterID] = e
		// The adoption's entry: listed with the others, blocking nothing
		// (without it the volume stays static).
		p.ceph.config.need(cephfs.PluginName, e, "", "")
		in.ClusterID = e.ClusterID
		if p.ceph.groups == nil {
			p.ceph.groups = map[string]string{}
		}
		p.ceph.groups[pv.Name] = group
		if p.ceph.readSubvolume != nil {
			in.Subvolume, in.NotSubvolume, readErr = p.ceph.readSubvolume(attrs["fsName"], group, name)
		}
	}
	d, ok := p.decideForm(vp, pv, deciding(func(refs []string) (adopt.Decision, error) {
		in := in
		in.ReferencedBy = refs
		return adopt.CephFS(in)
	}, "subvolume", readErr))
	if !ok {
		return
	}
	if d.Form != adopt.FormNative {
		return
	}
	if d.KeepRetain != "" {
		vp.FormWhy = append(vp.FormWhy, d.KeepRetain)
	}
	how := "when adopted with the admin Secret Ceph CSI's CephFS StorageClass names (adminID and adminKey)"
	if d.Predicted {
		how += ", which reads the subvolume first"
	}
	vp.FormWhy = append(vp.FormWhy, how+"; otherwise a static volume: stage only")
	user := pv.Spec.CephFS.User
	if user == "" {
		user = "admin"
	}
	vp.FormWhy = append(vp.FormWhy, "adopted, Ceph CSI mounts it with that Secret's admin credentials, as its own volumes, not as its own Ceph user client."+user)
}

// sameVolume records that the volume planned next is the one pv names
// (rewrite.VolumeKey), and how its form is decided, for shareImages.
func (p *Planner) sameVolume(pv *v1.PersistentVolume, decide decider) {
	if key, ok := rewrite.VolumeKey(pv); ok && p.shared.byKey != nil {
		p.shared.byKey[key] = append(p.shared.byKey[key], pv.Name)
		if p.shared.decide == nil {
			p.shared.decide = map[string]decider{}
		}
		p.shared.decide[pv.Name] = decide
	}
}

// shareImages decides again, by package adopt's rules, the form of each
// volume more than one PV names (its image, path or disk): the adoption
// leaves it, since deleting either PV would destroy it.
func (p *Planner) shareImages(plan *Plan, at volumeIndex) []volumeNote {
	var notes []volumeNote
	for _, names := range p.shared.byKey {
		if len(names) < 2 {
			continue
		}
		for _, name := range names {
			var others []string
			for _, o := range names {
				if o != name {
					others = append(others, o)
				}
			}
			d, err := p.shared.decide[name](others)
			if err != nil {
				continue
			}
			v := plan.Volumes[at[name]]
			why := d.Why
			if v.Plugin == plugin.VSphereInTreePluginName && len(v.FormWhy) > 1 {
				why = append(why, v.FormWhy[1:]...) // what vCenter said of the disk
			}
			notes = append(notes, volumeNote{pv: name, form: &formNote{form: string(d.Form), features: featureNames(d.Features), why: why}})
		}
	}
	return notes
}

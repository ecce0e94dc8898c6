package plan

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/translate"
	v1 "k8s.io/api/core/v1"
)

// pvCheck is what the plan's checks of an in-tree PV read and give: its
// translation (out, err) and the plugin's findings, the volume's plan, and
// the finding of a driver the input did not show.
type pvCheck struct {
	pv               *v1.PersistentVolume
	name             string
	out              *v1.PersistentVolume
	checked          []plugin.Finding
	err              error
	vp               *VolumePlan
	driverNotChecked *plugin.Finding
}

// planChecks are the plan's functions of rewrite.Checklist, one per check,
// each adding its findings to the volume's plan. The checks that need every
// object read (the Secrets, the Ceph entry, the pods using the volume, the
// node plugins where they run) record here what they need, and Finish
// judges them in the checklist's order (settleSecrets, settleCephConfig,
// inUseWarnings, nodePlugins).
var planChecks = map[rewrite.Check]func(p *Planner, c *pvCheck){
	rewrite.CheckTranslation: func(p *Planner, c *pvCheck) {
		for _, f := range c.checked {
			if p.secrets.seen && secretWarnings[f.Code] {
				// The secrets are in the input: finish judges them instead.
				continue
			}
			c.vp.Findings = append(c.vp.Findings, f)
		}
		if c.err != nil {
			c.vp.Reason = c.err.Error()
			return
		}
		c.vp.Migratable = true
		c.vp.Handle = c.out.Spec.CSI.VolumeHandle
		p.form(c.vp, c.pv, c.out)
		if c.pv.Spec.VsphereVolume != nil {
			c.vp.Findings = append(c.vp.Findings, p.drivers.topologyFindings(c.out, p.vsphere.keys)...)
		}
	},
	rewrite.CheckDriver: func(p *Planner, c *pvCheck) {
		// Without CSIDrivers in the input the volume is not ready, and the
		// plan's hazard says what to give, once (after the other checks).
		if f := p.drivers.check(c.name); f != nil && f.Code != FindingCSIDriversNotChecked {
			c.vp.Findings = append(c.vp.Findings, *f)
		} else {
			c.driverNotChecked = f
		}
	},
	rewrite.CheckObject: func(p *Planner, c *pvCheck) {
		if f := p.objectRefusal(c.pv); f != nil {
			c.vp.Findings = append(c.vp.Findings, *f)
		}
	},
	rewrite.CheckClaim: func(p *Planner, c *pvCheck) {
		if f := p.claimRefusal(c.pv); f != nil {
			c.vp.Findings = append(c.vp.Findings, *f)
		}
	},
	rewrite.CheckReplacement: func(p *Planner, c *pvCheck) {
		if c.err != nil || slices.ContainsFunc(c.checked, func(f plugin.Finding) bool { return f.Severity == plugin.SeverityBlocker }) {
			return
		}
		// The replacement is built from out and the findings, not
		// translated again; where the PV is refused for other reasons
		// too, so that every reason is named (as the writer names them).
		changes, r := p.rewriteChanges(c.pv, c.out, c.checked)
		c.vp.Findings = append(c.vp.Findings, changes...)
		if r != nil && len(c.vp.KeptBy) > 0 {
			c.vp.Source = r.Source()
		}
	},
	rewrite.CheckKept: func(p *Planner, c *pvCheck) {
		if kept, _ := p.keptFinding("PersistentVolume", c.pv); kept != nil {
			c.vp.Findings = append(c.vp.Findings, *kept)
		}
	},
	rewrite.CheckSecrets: func(p *Planner, c *pvCheck) {
		// The Secrets (settleSecrets) and the Ceph entry (settleCephConfig)
		// the volume needs.
		p.needs(c.pv, c.name, c.out, c.err, c.pv.Name)
	},
	rewrite.CheckCephEntry:  func(*Planner, *pvCheck) {}, // recorded with the Secrets: needs
	rewrite.CheckInUse:      func(*Planner, *pvCheck) {}, // inUseWarnings, from the pods read
	rewrite.CheckNodePlugin: func(*Planner, *pvCheck) {}, // nodePlugins, from the pods read
}

func (p *Planner) addPV(pv *v1.PersistentVolume) {
	p.runs.saw(p.runs.pvs, pv.Name)
	name := plugin.InTreeNameOfPV(pv)
	if name == "" || !p.inScope(pv) {
		return
	}
	p.settleDrivers()
	p.plugins[name] = true
	vp := VolumePlan{Name: pv.Name, Plugin: name}
	if pv.Spec.ClaimRef != nil {
		vp.Claim = claimKey(pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
	}
	// The translation and the plugin's findings, from one lookup of the
	// PV's plugin.
	out, checked, _, err := p.tr.TranslateAndCheckPV(p.logger, pv)
	var noPlugin *translate.NoPluginError
	if errors.As(err, &noPlugin) {
		vp.Reason = "no migration plugin registered for " + name
		p.plan.Volumes = append(p.plan.Volumes, vp)
		p.plan.Blocked = true
		return
	}
	vp.Driver, _ = p.tr.GetCSINameFromInTreeName(name)
	// Its keepers, before the replacement, which gives them the form to
	// hold.
	_, vp.KeptBy = p.keptFinding("PersistentVolume", pv)
	c := &pvCheck{pv: pv, name: name, out: out, checked: checked, err: err, vp: &vp}
	for _, check := range rewrite.Checklist() {
		planChecks[check](p, c)
	}
	for _, f := range vp.Findings {
		if f.Severity == plugin.SeverityBlocker {
			vp.Migratable = false
			if vp.Reason == "" {
				vp.Reason = f.Message
			}
		}
	}
	if f := c.driverNotChecked; f != nil && vp.Migratable {
		vp.Migratable, vp.Reason = false, f.Message
		vp.Findings = append(vp.Findings, *f)
	}
	if !vp.Migratable {
		p.plan.Blocked = true
	}
	p.plan.Volumes = append(p.plan.Volumes, vp)
}

// refusedFinding is the finding of a rewrite refusal err of field: the
// refusal's own code (ClaimGone, BeingDeleted, ...), one code per
// condition in the plan and the writer's refusals.
func refusedFinding(field string, err error) *plugin.Finding {
	code := string(rewrite.CodeOf(err))
	if code == "" {
		code = FindingRewriteRefuses
	}
	return &plugin.Finding{Code: code, Severity: plugin.SeverityBlocker, Field: field,
		Message: "the rewrite would refuse it: " + reasonOf(err), Remedy: remedyOf(err), Action: actionOf(err), ActsOn: actsOnOf(err)}
}

// objectRefusal is the finding for what makes rewrite -apply refuse the PV
// object (rewrite.ObjectRefusal), nil when nothing does.
func (p *Planner) objectRefusal(pv *v1.PersistentVolume) *plugin.Finding {
	err := rewrite.ObjectRefusal(pv)
	if err == nil || pv.DeletionTimestamp != nil && p.runs.resumes(pv.Name) {
		// (A PV a saved run is deleting is resumed by that run: the
		// settled runs say so.)
		return nil
	}
	field := "metadata.finalizers"
	if pv.DeletionTimestamp != nil {
		field = "metadata.deletionTimestamp"
	}
	return refusedFinding(field, err)
}

// claimRefusal is the finding for what makes rewrite -apply refuse the
// PV for its claim (rewrite.ClaimRefusal), or for claims the input lacks;
// nil when nothing does.
func (p *Planner) claimRefusal(pv *v1.PersistentVolume) *plugin.Finding {
	c := pv.Spec.ClaimRef
	if c == nil {
		return nil
	}
	if !p.claims.seen && c.UID != "" {
		if pv.Status.Phase == v1.VolumeReleased {
			return refusedFinding("spec.claimRef", &rewrite.Refusal{Code: rewrite.CodeClaimGone, Reason: fmt.Sprintf("its claim %s/%s is gone (the PV is Released)", c.Namespace, c.Name),
				Remedy: "reclaim it (delete the image by hand, then the PV), or re-bind it: clear spec.claimRef.uid and create a claim with spec.volumeName " + pv.Name})
		}
		return &plugin.Finding{Code: FindingClaimNotChecked, Severity: plugin.SeverityBlocker, Field: "spec.claimRef",
			Message: reasonClaimNotChecked, Remedy: remedyClaimNotChecked, Action: plugin.ActionGiveInput, ActsOn: "PersistentVolumeClaims"}
	}
	if err := rewrite.ClaimRefusal(pv, p.claims.get(c.Namespace, c.Name)); err != nil {
		return refusedFinding("spec.claimRef", err)
	}
	return nil
}

// The finding of a bound PV whose claim the input lacks (the same strings
// for every PV: a dump of PVs alone has one per PV).
const (
	reasonClaimNotChecked = "the input has no PersistentVolumeClaims: whether the claim exists and is bound to this PV (the rewrite requires it) is not checked"
	remedyClaimNotChecked = "give the claims too, or read them from the cluster"
)

// rewriteChanges are the findings for what the rewrite changes beyond the
// translated source (a reclaim policy kept at Retain), with the replacement
// (nil when the rewrite would refuse the PV).
// out is pv's translation and checked its findings (rewrite -apply's
// replacement is built from them, not translated again).
func (p *Planner) rewriteChanges(pv, out *v1.PersistentVolume, checked []plugin.Finding) ([]plugin.Finding, *rewrite.PV) {
	var pvc *v1.PersistentVolumeClaim
	if c := pv.Spec.ClaimRef; c != nil {
		pvc = p.claims.get(c.Namespace, c.Name)
	}
	sc := p.classes.byName[pv.Spec.StorageClassName]
	r, err := rewrite.Replacement(p.tr, p.logger, pv, out, checked, sc, pvc)
	if need, ok := r.DeletionNeed(); ok && err == nil {
		p.secrets.needs = append(p.secrets.needs, secretNeed{SecretNeed: need, pv: pv.Name})
	}
	if err != nil {
		// CheckPV's blockers are reported already (the caller asks only
		// without them); what is left is the class's provisioner secret.
		return []plugin.Finding{{Code: string(rewrite.CodeNotTranslatable), Severity: plugin.SeverityBlocker, Field: "spec.storageClassName",
			Message: "the rewrite would refuse it: " + err.Error(),
			Remedy:  "fix the provisioner secret parameters (csi.storage.k8s.io/provisioner-secret-name and csi.storage.k8s.io/provisioner-secret-namespace) of StorageClass " + pv.Spec.StorageClassName}}, nil
	}
	var found []plugin.Finding
	if change := rewrite.AccessModeChange(pv, r.CSI); change != "" {
		found = append(found, plugin.Finding{Code: FindingAccessModesChanged, Severity: plugin.SeverityWarning, Field: "spec.accessModes",
			Message: p.intern("the rewritten PV's " + change), Remedy: "nothing to do if the volume's pods run on one node at a time; otherwise keep the PV in-tree and move its data to a volume of a driver that serves those modes"})
	}
	if r.KeptRetain() == "" {
		return found, &r
	}
	msg := strings.Join(r.KeptWhy, "; ")
	remedy := "delete the volume by hand when it is released"
	if r.NoDeletionSecret {
		remedy += "; or give the PV's StorageClass with its provisioner secret in the input (or set annotations " + secrets.AnnDeletionSecretName + " and " + secrets.AnnDeletionSecretNamespace + " on the PV) so that the driver can delete it"
	}
	return append(found, plugin.Finding{Code: FindingReclaimKept, Severity: plugin.SeverityWarning, Field: "spec.persistentVolumeReclaimPolicy",
		Message: p.intern(fmt.Sprintf("the rewritten PV keeps reclaim policy %s instead of %s: %s", r.RestorePolicy, r.OriginalPolicy, msg)),
		Remedy:  p.intern(remedy)}), &r
}

// reasonOf is the reason of a rewrite refusal, without its remedy.
func reasonOf(err error) string {
	var r *rewrite.Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	return err.Error()
}

// intern returns one copy of each distinct message, so that a finding
// many PVs share is kept once.
func (p *Planner) intern(msg string) string {
	if m, ok := p.messages[msg]; ok {
		return m
	}
	if p.messages == nil {
		p.messages = map[string]string{}
	}
	if len(p.messages) < 1000 {
		p.messages[msg] = msg
	}
	return msg
}

// remedyOf is the remedy of a rewrite refusal.
func remedyOf(err error) string {
	var r *rewrite.Refusal
	if errors.As(err, &r) && r.Remedy != "" {
		return r.Remedy
	}
	return "see the message; the rewrite leaves the PV as it is"
}

// actsOnOf is what a refusal's remedy acts on ("" for none).
func actsOnOf(err error) string {
	var r *rewrite.Refusal
	if errors.As(err, &r) {
		return r.ActsOn
	}
	return ""
}

// actionOf is the action of a refusal's remedy ("" for none).
func actionOf(err error) plugin.Action {
	var r *rewrite.Refusal
	if errors.As(err, &r) {
		return r.Action
	}
	return ""
}

// needs records the Ceph cluster entry and the secrets the translation of
// pv, a volume of in-tree plugin inTree, (out, or err) makes a Ceph CSI
// driver read; volume names the planned volume (its PV's name), "" for the
// PV form of an inline volume.
func (p *Planner) needs(pv *v1.PersistentVolume, inTree string, out *v1.PersistentVolume, err error, volume string) {
	translated := out
	if err != nil {
		translated = nil
	}
	e, ok := rewrite.CephEntryNeeded(pv, translated)
	if !ok {
		return
	}
	p.addCluster(e.Monitors)
	p.ceph.config.need(inTree, e, volume, "")
	if err != nil {
		return
	}
	for _, n := range rewrite.SecretNeeds(pv, out) {
		p.secrets.needs = append(p.secrets.needs, secretNeed{SecretNeed: n, pv: volume})
	}
}

func (p *Planner) addCluster(mons []string) ceph.ClusterEntry {
	e := ceph.EntryFor(mons)
	p.ceph.clusters[e.ClusterID] = e
	return e
}

// markInUse names the pods that use each volume, and says why a volume
// that could be native is adopted only once they stop.
func (p *Planner) markInUse(plan *Plan) []volumeNote {
	var notes []volumeNote
	for _, v := range plan.Volumes {
		if v.Claim == "" {
			continue
		}
		n := volumeNote{pv: v.Name, inUseBy: p.pods.byClaim[v.Claim]}
		if len(n.inUseBy) > 0 && v.Form == string(adopt.FormNative) {
			if v.Plugin == plugin.CephFSInTreePluginName {
				n.formWhy = append(n.formWhy, "pods use it: the adoption changes the volume handle the kubelet tracks, so it is adopted once they are stopped (rewritten online while in use, it is a static volume until an adoption of CSI PVs adopts it unused)")
			} else {
				n.formWhy = append(n.formWhy, "pods use it: the adoption changes the volume handle the kubelet tracks, so it is adopted once they are stopped (rewritten online, it gets its migration handle, and an adoption of CSI PVs adopts it when unused)")
			}
		}
		if n.inUseBy != nil {
			notes = append(notes, n)
		}
	}
	return notes
}

// nodePlugins block a volume whose pods run where its driver's node plugin
// does not (rewrite.CheckNodePlugin).
func (p *Planner) nodePlugins(plan *Plan) []volumeNote {
	var notes []volumeNote
	for _, v := range plan.Volumes {
		if v.Claim == "" || v.Driver == "" {
			continue
		}
		n := volumeNote{pv: v.Name}
		for _, f := range p.drivers.nodePluginMissing(v.Driver, p.pods.byClaim[v.Claim], p.pods.node) {
			n.findings = append(n.findings, f)
			if n.block == "" {
				n.block = f.Message
			}
		}
		if n.findings != nil {
			notes = append(notes, n)
		}
	}
	return notes
}

// inScope reports whether a PV is in Options.Namespace's scope: bound to a
// claim of that namespace (every PV without one).
func (p *Planner) inScope(pv *v1.PersistentVolume) bool {
	ns := p.opts.Namespace
	return ns == "" || pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == ns
}

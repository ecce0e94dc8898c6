package plan

import (
	"slices"
	"strings"
	"unique"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/cephfs"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/rewrite"
	v1 "k8s.io/api/core/v1"
)

type inlineFound struct {
	plan  InlinePlan
	key   string // the workload's "Kind/namespace/name"
	owner string // its controller's "Kind/name"
	ns    string
}

// addWorkload records the in-tree inline volumes of a pod or a workload's
// pod template, the claims a running pod uses, and a StatefulSet's claim
// templates.
func (p *Planner) addWorkload(w *rewrite.Workload) {
	p.inline.owners[w.Key()] = w.Owner
	p.addReplicas(w)
	p.ceph.config.addWorkload(w)
	if w.Kind == "Pod" && !w.Finished {
		// One copy of the pod's key for every map (a large cluster has
		// tens of thousands of pods).
		key := w.Namespace + "/" + w.Name
		if w.Spec.NodeName != "" {
			p.pods.node[key] = unique.Make(w.Spec.NodeName).Value() // one copy a node
		}
		if w.Stuck != "" {
			p.pods.stuck[key] = w.Stuck
		}
		if pod, ok := w.Obj.(*v1.Pod); ok {
			p.pods.phase[key] = unique.Make(string(pod.Status.Phase)).Value()
		}
		for _, claim := range rewrite.PodClaims(w.Name, w.Spec) {
			k := claimKey(w.Namespace, claim)
			p.pods.byClaim[k] = append(p.pods.byClaim[k], key)
		}
	}
	if ns := p.opts.Namespace; ns != "" && w.Namespace != ns {
		return
	}
	for i := range w.Spec.Volumes {
		vol := &w.Spec.Volumes[i]
		if name := plugin.InTreeNameOfVolume(vol); name != "" {
			p.plugins[name] = true
			p.inline.found = append(p.inline.found, inlineFound{plan: p.planInline(w, vol, name), key: w.Key(), owner: w.Owner, ns: w.Namespace})
		}
	}
	for _, t := range w.ClaimTemplates {
		class := ""
		if t.Spec.StorageClassName != nil {
			class = *t.Spec.StorageClassName
		}
		p.inline.templates = append(p.inline.templates, ClaimTemplatePlan{StatefulSet: w.Namespace + "/" + w.Name, Template: t.Name, StorageClass: class})
	}
}

// planInline plans an inline volume: never migratable in place (no pod
// spec can be changed, and nothing translates inline volumes for the
// kubelet after the in-tree plugins are gone), but movable to a PV and
// claim, whose needs (secrets, cluster entry) and blockers are those of the
// PV form `csimigrate translate` prints.
func (p *Planner) planInline(w *rewrite.Workload, vol *v1.Volume, plugin string) InlinePlan {
	ip := InlinePlan{Workload: w.ID(), Volume: vol.Name, Plugin: plugin, Claim: rewrite.InlineClaimName(w, vol.Name)}
	why := "the in-tree plugin is removed (1.31) and no component translates inline volumes for the kubelet any more"
	if vol.VsphereVolume != nil {
		why = "the vSphere CSI driver does not support inline volumes after migration"
	}
	ip.Reason = why + "; a pod's volumes cannot be changed: create the PV and claim of its translation (" + ip.Claim +
		") and change the " + w.Kind + " to use the claim"
	form := rewrite.NewInlineForm(p.tr, p.logger, w, vol, ip.Claim, p.inline.capacity, InlineRemedy)
	if form.InTree == nil {
		return ip
	}
	var blockers []string
	for _, f := range form.Blockers {
		blockers = append(blockers, f.Message+" ("+f.Remedy+")")
	}
	if form.Err != nil {
		blockers = append(blockers, form.Err.Error())
	}
	if vol.VsphereVolume != nil && p.opts.VCenter != nil {
		found, _ := p.vsphereDisk("spec.volumes["+vol.Name+"].vsphereVolume", vol.VsphereVolume)
		for _, f := range found {
			blockers = append(blockers, f.Message+" ("+f.Remedy+")")
		}
	}
	if len(blockers) > 0 {
		ip.Reason += "; first: " + strings.Join(blockers, "; ")
	}
	p.needs(form.InTree, plugin, form.CSI, form.Err, "")
	return ip
}

// InlineRemedy is the remedy of a finding of an inline volume's PV form:
// the workload's volume is what the admin changes before translating.
func InlineRemedy(w *rewrite.Workload, f plugin.Finding) string {
	switch f.Code {
	case rbd.FindingNoSecret:
		return "create a Secret in " + w.Namespace + " holding the user's key under \"key\" (and \"adminId\" for a non-admin user), name it in the volume's secretRef in the " + w.Kind + "'s manifest, then translate it"
	case cephfs.FindingSecretFileOnly:
		return "create a Secret in " + w.Namespace + " holding the key under \"key\", name it in the volume's secretRef in the " + w.Kind + "'s manifest, then translate it"
	}
	return f.Remedy
}

// settleInline lists each inline volume once, under the top owner in the
// input whose pod template has it (a Deployment rather than its ReplicaSets
// and pods), with the owned objects it came through.
func (p *Planner) settleInline() {
	has := make(map[string]bool, len(p.inline.found)) // "key\x00volume" of every inline volume found
	for _, f := range p.inline.found {
		has[f.key+"\x00"+f.plan.Volume] = true
	}
	top := func(f inlineFound) string {
		k, owner := f.key, f.owner
		for i := 0; owner != "" && i < 8; i++ {
			kind, name, _ := strings.Cut(owner, "/")
			cand := kind + "/" + f.ns + "/" + name
			next, known := p.inline.owners[cand]
			if !known {
				break
			}
			if has[cand+"\x00"+f.plan.Volume] {
				k = cand
			}
			owner = next
		}
		return k
	}
	index := map[string]int{} // group -> index in out
	var out []InlinePlan
	var via [][]string
	for _, f := range p.inline.found {
		t := top(f)
		group := t + "\x00" + f.plan.Volume
		i, ok := index[group]
		if !ok {
			i = len(out)
			index[group] = i
			out = append(out, InlinePlan{})
			via = append(via, nil)
		}
		if t == f.key {
			out[i] = f.plan
		} else {
			via[i] = append(via[i], f.plan.Workload)
		}
	}
	for i := range out {
		slices.Sort(via[i])
		out[i].Via = via[i]
	}
	if len(out) > 0 {
		p.plan.Blocked = true
	}
	p.plan.InlineVolumes = out
}

// settleTemplates keeps the claim templates whose class (their own, else
// the default class) is an in-tree one.
func (p *Planner) settleTemplates() {
	var out []ClaimTemplatePlan
	for _, t := range p.inline.templates {
		class := t.StorageClass
		if class == "" {
			class = p.classes.defaultName
		}
		sc, ok := p.classes.byName[class]
		if !ok || !rewrite.TranslatableClass(p.tr, sc) {
			continue
		}
		t.StorageClass = class
		i := slices.IndexFunc(p.plan.StorageClasses, func(s StorageClassPlan) bool { return s.Name == class })
		t.Migratable = i >= 0 && p.plan.StorageClasses[i].Migratable
		if t.Migratable {
			t.Reason = "new replicas' claims are provisioned by class " + class + ", which the rewrite replaces by its CSI form (same name): nothing to change in the StatefulSet"
		} else {
			t.Reason = "new replicas' claims would be provisioned by class " + class + ", which cannot be translated (the class's findings say why): scaling up fails after the upgrade"
			p.plan.Blocked = true
		}
		out = append(out, t)
	}
	p.plan.ClaimTemplates = out
}

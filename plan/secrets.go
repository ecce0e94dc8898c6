package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/cephfs"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/secrets"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// secretNeed is a Secret a Ceph CSI driver will read for a migrated volume
// or class (rewrite.SecretNeed), and what it is needed for in the plan.
type secretNeed struct {
	rewrite.SecretNeed
	pv    string // the PV whose volume needs it, "" for others
	class string // the StorageClass whose admin secret it is
}

// settleSecrets plans the Secrets the volumes and classes need, once each,
// blocks the plan when the input has none to check, and returns what it
// concludes of the volumes that need them.
func (p *Planner) settleSecrets(plan *Plan) []volumeNote {
	secretPlans := map[string]*SecretPlan{}
	add := func(sp SecretPlan) {
		k := sp.Namespace + "/" + sp.Name + "/" + sp.Action
		if old, ok := secretPlans[k]; ok {
			old.Fields = slices.Compact(slices.Sorted(slices.Values(append(old.Fields, sp.Fields...))))
			return
		}
		secretPlans[k] = &sp
	}
	var unchecked []string
	var notes []volumeNote
	for _, need := range p.secrets.needs {
		if !p.secrets.seen {
			unchecked = append(unchecked, need.Key())
			if need.From != "" {
				unchecked = append(unchecked, need.From)
			}
		}
		if n, ok := p.planSecret(need, add); ok {
			notes = append(notes, n)
		}
	}
	if len(unchecked) > 0 {
		slices.Sort(unchecked)
		unchecked = slices.Compact(unchecked)
		plan.Hazards = append(plan.Hazards, plugin.Finding{Code: FindingSecretsNotChecked, Severity: plugin.SeverityBlocker, Field: "Secret",
			Message: fmt.Sprintf("the input has no Secrets: the %d the migrated volumes and classes need (%s) are not checked", len(unchecked), strings.Join(first(unchecked, 5), ", ")),
			Remedy:  "give the Secrets too (their names and the fields the checks read, without their values), or read them from the cluster; values are never printed", Action: plugin.ActionGiveInput, ActsOn: "Secrets"})
		plan.Blocked = true
	}
	for _, k := range slices.Sorted(maps.Keys(secretPlans)) {
		plan.Secrets = append(plan.Secrets, *secretPlans[k])
	}
	return notes
}

// secretMissing reports a Secret that is not in the input.
func (p *Planner) secretMissing(ref, why string) {
	p.plan.Hazards = append(p.plan.Hazards, plugin.Finding{Code: FindingSecretMissing, Severity: plugin.SeverityBlocker, Object: "Secret " + ref,
		Message: "Secret " + ref + " is not in the input: " + why, Remedy: "create it (the plan's Secrets list its fields), or give it in the input"})
	p.plan.Blocked = true
}

// planSecret judges a secret a migrated volume or class needs as its Ceph
// CSI driver will read it (secrets.CephCSISecretReady, the rule rewrite
// -apply applies too), lists what to create or change under SECRETS, and
// blocks the volume or class until the secret is ready: a PV rewritten
// before would not mount, expand or delete. ok says whether it concludes
// anything of a volume (n).
func (p *Planner) planSecret(need secretNeed, add func(SecretPlan)) (n volumeNote, ok bool) {
	ref := need.Key()
	what := "migrated volumes"
	if need.class != "" {
		what = "StorageClass " + need.class + " (provisioning, expansion and deletion)"
	}
	s, found := p.secrets.slim[ref]
	if !p.secrets.seen {
		return p.secretNotChecked(need, what, add)
	}
	if need.From != "" {
		if _, ok := p.secrets.slim[need.From]; !ok {
			p.secretMissing(need.From, "the CephFS secret "+ref+" is made from it")
		}
	}
	if !found {
		s = nil
	}
	action, problem, fixes := rewrite.Judge(need.SecretNeed, s)
	if action == "" {
		return volumeNote{}, false
	}
	fields, reason := need.Fields(action)
	for _, f := range fixes {
		fields, reason = []string{f.Field + "=" + f.Value}, f.Reason
	}
	sp := SecretPlan{Namespace: need.Namespace, Name: need.Name, Action: action, Fields: fields, From: need.From, Reason: reason}
	if s != nil {
		sp.KeptBy = rewrite.KeepersOf(s)
		for _, k := range sp.KeptBy {
			if k.Reconciles {
				sp.Reason += "; kept by " + k.String() + ": change it in " + k.Source + ", or its next reconcile undoes the change"
			}
		}
	}
	add(sp)
	remedy := fmt.Sprintf("%s Secret %s with %s (the plan's Secrets list it), then run the plan again", action, ref, strings.Join(fields, ", "))
	if need.From != "" && action == "create" {
		remedy = fmt.Sprintf("create Secret %s with %s, userKey being the key of Secret %s (the plan's Secrets list it), then run the plan again", ref, strings.Join(fields, ", "), need.From)
	}
	msg := fmt.Sprintf("Secret %s, which Ceph CSI reads for %s (%s), %s", ref, what, strings.Join(need.Uses, ", "), problem)
	p.plan.Blocked = true
	if need.pv != "" {
		code := FindingSecretNotReady
		if !found {
			code = FindingSecretMissing
		}
		return volumeNote{pv: need.pv, findings: []plugin.Finding{{Code: code, Severity: plugin.SeverityBlocker, Object: "Secret " + ref,
			Message: p.intern(msg), Remedy: p.intern(remedy)}}, block: p.intern("Secret " + ref + " " + problem)}, true
	}
	if need.class != "" {
		code := FindingSecretNotReady
		if len(fixes) > 0 && fixes[0].Field == secrets.CephMigrationUserKey {
			code = FindingClassSecretNeedsAdminId
			msg = fmt.Sprintf("the class's adminId is %q, but Ceph CSI reads the migration user only from the admin secret's adminId and defaults to admin: provisioning would connect as client.admin with %s's key and fail", need.User, need.User)
		}
		if !found {
			code = FindingSecretMissing
		}
		p.plan.Hazards = append(p.plan.Hazards, plugin.Finding{Code: code, Severity: plugin.SeverityBlocker, Object: "StorageClass " + need.class, Message: msg, Remedy: remedy})
		why := "its admin secret " + ref + " " + problem
		for _, f := range fixes {
			why = fmt.Sprintf("Ceph CSI would provision as client.admin: add %s: %s to Secret %s", f.Field, f.Value, ref)
		}
		// The writer refuses the class with SecretNotReady where the
		// hazard is the adminId's own finding.
		classCode := code
		if classCode == FindingClassSecretNeedsAdminId {
			classCode = FindingSecretNotReady
		}
		p.classBlocked(need.class, classCode, why)
		return volumeNote{}, false
	}
	// The PV form of an inline volume: its own plan says what it needs.
	return volumeNote{}, false
}

// secretNotChecked lists a secret the input could not show (it has no
// Secrets) for checking. Ready means checked: a volume or class whose
// Secret could not be judged is not called migratable (the hazard
// SecretsNotChecked says what to give).
func (p *Planner) secretNotChecked(need secretNeed, what string, add func(SecretPlan)) (volumeNote, bool) {
	ref := need.Key()
	fields, _ := need.Fields("create")
	add(SecretPlan{Namespace: need.Namespace, Name: need.Name, Action: "check", Fields: fields, From: need.From,
		Reason: "not checked (the input has no Secrets): Ceph CSI needs it for " + what + ", with " + strings.Join(fields, ", ")})
	why := "Secret " + ref + " not checked: the input has no Secrets"
	switch {
	case need.pv != "":
		return volumeNote{pv: need.pv, block: p.intern(why), findings: []plugin.Finding{{Code: FindingSecretsNotChecked, Severity: plugin.SeverityBlocker, Object: "Secret " + ref,
			Message: p.intern(why), Remedy: "give the Secrets too", Action: plugin.ActionGiveInput, ActsOn: "Secrets"}}}, true
	case need.class != "":
		p.classBlocked(need.class, FindingSecretsNotChecked, "its admin "+strings.ToLower(why[:1])+why[1:])
	}
	return volumeNote{}, false
}

// secretWarnings are the plugins' secret warnings, which the plan replaces
// by its judgement of the secrets when the input has them.
var secretWarnings = map[string]bool{rbd.FindingNonAdminUser: true, cephfs.FindingCSISecret: true}

// slimSecret keeps of a Secret what the checks read: whether "key" and
// "userKey" are set, and the user names (adminId, userID); never a key.
//
// Of its metadata it keeps what names a tool that keeps it
// (rewrite.KeepersOf).
func slimSecret(o *v1.Secret) *v1.Secret {
	slim := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name}, Data: map[string][]byte{}}
	if keepers := rewrite.KeepersOf(o); len(keepers) > 0 {
		// Not kubectl's last-applied configuration: a copy of the
		// Secret with its values.
		slim.Labels, slim.OwnerReferences = o.Labels, o.OwnerReferences
		for k, v := range o.Annotations {
			if k != v1.LastAppliedConfigAnnotation {
				if slim.Annotations == nil {
					slim.Annotations = map[string]string{}
				}
				slim.Annotations[k] = v
			}
		}
		for _, m := range o.ManagedFields {
			slim.ManagedFields = append(slim.ManagedFields, metav1.ManagedFieldsEntry{Manager: m.Manager, Operation: m.Operation})
		}
	}
	data := secrets.SecretStringData(o)
	for _, k := range []string{secrets.CephInTreeKey, secrets.CephUserKey} {
		if data[k] != "" {
			slim.Data[k] = []byte("set")
		}
	}
	for _, k := range []string{secrets.CephMigrationUserKey, secrets.CephUserID} {
		if id, ok := data[k]; ok {
			slim.Data[k] = []byte(id)
		}
	}
	return slim
}

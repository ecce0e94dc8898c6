package rewrite

import (
	"errors"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/plugin"
)

// Code names why a rewrite leaves an object as it was, for programs: a
// controller's Events and metrics, a report's JSON.
type Code string

// Refusal codes.
const (
	// CodeBeingDeleted: the PV is being deleted.
	CodeBeingDeleted Code = "BeingDeleted"
	// CodeUnknownFinalizer: the PV has a finalizer whose owner the rewrite
	// does not know.
	CodeUnknownFinalizer Code = "UnknownFinalizer"
	// CodePreBound: the PV names a claim that is not bound to it yet.
	CodePreBound Code = "PreBound"
	// CodeClaimGone: the PV's claim does not exist (the PV is released).
	CodeClaimGone Code = "ClaimGone"
	// CodeClaimReplaced: a claim of the same name with another uid.
	CodeClaimReplaced Code = "ClaimReplaced"
	// CodeClaimBeingDeleted: the PV's claim is being deleted.
	CodeClaimBeingDeleted Code = "ClaimBeingDeleted"
	// CodeClaimBoundElsewhere: the claim is bound to another PV.
	CodeClaimBoundElsewhere Code = "ClaimBoundElsewhere"
	// CodeSecretMissing: a Secret the driver will read does not exist.
	CodeSecretMissing Code = "SecretMissing"
	// CodeSecretNotReady: a Secret the driver will read lacks what it
	// reads (Judge).
	CodeSecretNotReady Code = "SecretNotReady"
	// CodeInUse: pods that have not finished use the volume, and the
	// rewrite is not safe online.
	CodeInUse Code = "InUse"
	// CodeNotTranslatable: the object does not translate, or a finding
	// blocks it.
	CodeNotTranslatable Code = "NotTranslatable"
	// CodeNotInScope: the object is not one the direction replaces.
	CodeNotInScope Code = "NotInScope"
	// CodeNotFound: the object is gone and nothing was saved for it.
	CodeNotFound Code = "NotFound"
	// CodeReplacedSinceReview: the live object is not the reviewed one.
	CodeReplacedSinceReview Code = "ReplacedSinceReview"
	// CodeNotRecorded: an earlier rewrite did not record what an undo
	// needs.
	CodeNotRecorded Code = "NotRecorded"
	// CodeHandleChanges: the undo would give the volume another name in
	// Kubernetes.
	CodeHandleChanges Code = "HandleChanges"
	// CodePluginRemoved: the cluster's release has no in-tree plugin to
	// undo to.
	CodePluginRemoved Code = "PluginRemoved"
	// CodeNotAdoptable: the volume cannot become one of its CSI driver's
	// own (package adopt says why).
	CodeNotAdoptable Code = "NotAdoptable"
	// CodeCephEntryMissing: the Ceph CSI driver does not serve the cluster
	// entry the migrated volume names: it would not mount it.
	CodeCephEntryMissing Code = "CephEntryMissing"
	// CodeCephEntryUnchecked: the writer may not read what tells which
	// cluster entries the Ceph CSI driver serves, so it cannot tell whether
	// the driver would mount the migrated volume; the Reason names the
	// missing permissions.
	CodeCephEntryUnchecked Code = "CephEntryUnchecked"
	// CodeCephCSIConfigNotFound: what the cluster shows does not tell
	// where the Ceph CSI driver reads its cluster entries (its DaemonSet,
	// its config map, the ceph-csi-operator's objects), so whether it
	// serves the migrated volume's entry is not checked. The plan's
	// finding of the same code says so too.
	CodeCephCSIConfigNotFound Code = "CephCSIConfigNotFound"
	// CodeKeptByReconciler: a tool that reconciles the object from a
	// source of its own (Helm, Flux, Argo CD, the addon manager, an
	// operator) would put the old form back, or fail every sync on the
	// PV's immutable source, and nobody has said that the source has
	// changed (KeptRefusal).
	CodeKeptByReconciler Code = "KeptByReconciler"
	// CodeCSIDriverMissing: no CSIDriver object registers the CSI driver
	// the replacement names: nothing would provision, attach or mount for
	// it. The plan's finding of the same code says so too.
	CodeCSIDriverMissing Code = "CSIDriverMissing"
	// CodeCSINodeDriverMissing: pods that use the volume run on nodes
	// whose CSINode registers no node plugin of the replacement's driver:
	// it would not mount there. The plan's finding of the same code says
	// so too.
	CodeCSINodeDriverMissing Code = "CSINodeDriverMissing"
)

// Refusal is an object a rewrite leaves exactly as it was: a code, the
// reason, and what an admin can do about it when the reason does not say.
type Refusal struct {
	Code   Code   `json:"code"`
	Reason string `json:"reason"`
	// Remedy is what an administrator can do, in the engine's words,
	// which name no program's commands or flags.
	Remedy string `json:"remedy,omitempty"`
	// Action is the remedy as data (plugin.Action), for a program to word
	// with its own commands and flags; ActsOn names what it acts on.
	Action plugin.Action `json:"action,omitempty"`
	ActsOn string        `json:"actsOn,omitempty"`
	// Also are the object's other reasons to be left as it was, each with
	// its own code, found by the same checks (JoinRefusals): an admin
	// sees every one at once, not the next only after fixing the first.
	Also []*Refusal `json:"also,omitempty"`
}

// Error is the reason and the remedy, then each further reason's.
func (r *Refusal) Error() string {
	s := r.Reason
	if r.Remedy != "" {
		s += "; " + r.Remedy
	}
	for _, o := range r.Also {
		s += "; also (" + string(o.Code) + "): " + o.Error()
	}
	return s
}

// Codes are the refusal's code and its further reasons' codes, in order.
func (r *Refusal) Codes() []Code {
	out := []Code{r.Code}
	for _, o := range r.Also {
		out = append(out, o.Codes()...)
	}
	return out
}

// FindingRefusal is the refusal of an object for a blocking finding f (a
// plugin's or the plan's): the same code, message, remedy and action.
func FindingRefusal(f plugin.Finding) *Refusal {
	return &Refusal{Code: Code(f.Code), Reason: f.Message, Remedy: f.Remedy, Action: f.Action, ActsOn: f.ActsOn}
}

// JoinRefusals is the refusal of an object the checks left as it was for
// each refusal of rs (nil ones skipped): the first, with the others as its
// Also, or nil when there is none. No argument is modified.
func JoinRefusals(rs ...*Refusal) *Refusal {
	var first *Refusal
	for _, r := range rs {
		switch {
		case r == nil:
		case first == nil:
			c := *r
			c.Also = slices.Clone(r.Also)
			first = &c
		default:
			first.Also = append(first.Also, r)
		}
	}
	return first
}

// Refuse is a refusal with a code and a reason made by fmt.Sprintf.
func Refuse(code Code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// CodeOf is the code of the refusal err is or wraps, "" when it is none.
func CodeOf(err error) Code {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Code
	}
	return ""
}

// PVProtection is the finalizer of Kubernetes' pv-protection controller.
const PVProtection = "kubernetes.io/pv-protection"

// DeletionProtection are the finalizers with which Kubernetes' PV controller
// (HonorPVReclaimPolicy, on by default from 1.31) and external-provisioner
// hold a PV whose reclaim policy is Delete until they have deleted the
// volume. Their owners remove them when the policy becomes Retain; a
// rewrite waits for that and never removes them itself.
var DeletionProtection = []string{"kubernetes.io/pv-controller", "external-provisioner.volume.kubernetes.io/finalizer"}

// KnownFinalizer reports whether a finalizer is one a rewrite knows the
// owner and meaning of.
func KnownFinalizer(f string) bool {
	return f == PVProtection || slices.Contains(DeletionProtection, f)
}

// ObjectRefusal is why a rewrite leaves a PV alone for what the PV object
// itself says (being deleted, finalizers it does not know), or nil.
func ObjectRefusal(cur *v1.PersistentVolume) error {
	if cur == nil {
		return nil
	}
	if cur.DeletionTimestamp != nil {
		return &Refusal{Code: CodeBeingDeleted, Reason: fmt.Sprintf("being deleted (since %s); a rewrite would undo that delete", cur.DeletionTimestamp.UTC().Format(time.RFC3339)),
			Remedy: "let the deletion finish; nothing is left to migrate"}
	}
	if others := slices.DeleteFunc(slices.Clone(cur.Finalizers), KnownFinalizer); len(others) > 0 {
		return &Refusal{Code: CodeUnknownFinalizer, Reason: fmt.Sprintf("finalizers %q: csimigrate knows only %s (which it removes from the object it deleted) and %q (whose owners remove them once Retain is set)",
			others, PVProtection, DeletionProtection), Remedy: "wait for the finalizers' owners to remove them, or remove them if their owner is gone"}
	}
	return nil
}

// ClaimRefusal is why a rewrite leaves a PV alone for its claim, or nil:
// pvc is the claim the PV names (nil when there is none of that name). A PV
// pre-bound to a claim but not yet bound (no uid) is refused without reading
// the claim.
func ClaimRefusal(cur *v1.PersistentVolume, pvc *v1.PersistentVolumeClaim) error {
	if cur == nil || cur.Spec.ClaimRef == nil {
		return nil
	}
	c := cur.Spec.ClaimRef
	switch {
	case c.UID == "":
		return &Refusal{Code: CodePreBound, Reason: fmt.Sprintf("pre-bound to claim %s/%s but not bound yet", c.Namespace, c.Name),
			Remedy: "create the claim (or wait until it binds), or clear spec.claimRef"}
	case pvc == nil:
		return &Refusal{Code: CodeClaimGone, Reason: fmt.Sprintf("its claim %s/%s does not exist (the PV is released)", c.Namespace, c.Name),
			Remedy: "reclaim it (delete the image by hand, then the PV), or re-bind it: clear spec.claimRef.uid and create a claim with spec.volumeName " + cur.Name}
	case pvc.UID != c.UID:
		return &Refusal{Code: CodeClaimReplaced, Reason: fmt.Sprintf("claim %s/%s has uid %s, the PV names uid %s (a new claim of the same name)", c.Namespace, c.Name, pvc.UID, c.UID),
			Remedy: "re-bind the PV to the claim that uses it, or reclaim it"}
	case pvc.DeletionTimestamp != nil:
		return &Refusal{Code: CodeClaimBeingDeleted, Reason: fmt.Sprintf("its claim %s/%s is being deleted; the PV will be released", c.Namespace, c.Name),
			Remedy: "let the deletion finish; the PV is then reclaimed by its policy"}
	case pvc.Spec.VolumeName != cur.Name:
		return &Refusal{Code: CodeClaimBoundElsewhere, Reason: fmt.Sprintf("claim %s/%s is bound to volume %q, not to this PV", c.Namespace, c.Name, pvc.Spec.VolumeName),
			Remedy: "clear this PV's spec.claimRef, or fix the binding"}
	}
	return nil
}

package rewrite

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/internal/pvcopy"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/cephfs"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/translate"
)

// Annotations a rewrite puts on the CSI PV it creates, so that every later
// step (and a resumed run) derives its state from the cluster alone, and its
// undo gives back exactly what was there before.
const (
	// AnnReclaimPolicy records the PV's reclaim policy before the rewrite
	// set Retain; the last step restores it and removes the annotation.
	AnnReclaimPolicy = plugin.AnnOriginalReclaimPolicy
	// AnnMigratedFrom records the in-tree plugin the PV was rewritten from.
	AnnMigratedFrom = "csimigrate.io/migrated-from"
	// AnnPreRewritePolicy records, on a CSI PV the rewrite created, the
	// in-tree PV's reclaim policy before the rewrite: the CSI PV may keep
	// Retain where the in-tree PV had Delete, and the undo restores it.
	AnnPreRewritePolicy = "csimigrate.io/pre-rewrite-reclaim-policy"
	// AnnAddedAnnotations lists, comma-joined, the annotations the rewrite
	// added to the CSI PV (external-provisioner's deletion-secret ones);
	// the undo removes them.
	AnnAddedAnnotations = "csimigrate.io/added-annotations"
)

// PV is one PV and the PV that replaces it.
type PV struct {
	Name           string
	Driver         string
	OriginalPolicy v1.PersistentVolumeReclaimPolicy
	// RestorePolicy is the policy the last step restores: the original, or
	// Retain when the driver would not delete exactly the volume.
	RestorePolicy v1.PersistentVolumeReclaimPolicy
	// Hazard says why the policy is kept at Retain ("" when it is not).
	Hazard string
	// CSI is the replacement.
	CSI *v1.PersistentVolume
	// KeptWhy are the reasons of Hazard.
	KeptWhy []string
	// NoDeletionSecret: Retain is kept (also) for want of a deletion
	// secret.
	NoDeletionSecret bool
	// DeletionUser is the RADOS user of the deletion secret the rewrite
	// names (the class's adminId; "" for admin); AnyDeletionUser is set
	// when the PV named that secret itself and the user is not known.
	DeletionUser    string
	AnyDeletionUser bool
}

// hazardPrefix starts every reason of Hazard.
const hazardPrefix = "reclaim policy kept at Retain: "

// KeptRetain says why the replacement ends with Retain where the in-tree PV
// had another policy, as "reclaim policy Retain, not Delete: why"; "" when
// it keeps the PV's policy.
func (r PV) KeptRetain() string {
	if r.RestorePolicy == r.OriginalPolicy || r.OriginalPolicy == "" {
		return ""
	}
	return fmt.Sprintf("reclaim policy %s, not %s: %s", r.RestorePolicy, r.OriginalPolicy, strings.Join(r.KeptWhy, "; "))
}

// DeletionNeed is the deletion secret Ceph CSI reads to delete the volume of
// a replacement that ends with reclaim policy Delete, ok false when there is
// none to check.
func (r PV) DeletionNeed() (SecretNeed, bool) {
	if r.CSI == nil || r.CSI.Spec.CSI == nil {
		return SecretNeed{}, false
	}
	name, ns := r.CSI.Annotations[secrets.AnnDeletionSecretName], r.CSI.Annotations[secrets.AnnDeletionSecretNamespace]
	if r.RestorePolicy != v1.PersistentVolumeReclaimDelete || name == "" || plugin.InTreeNameOfDriver(r.CSI.Spec.CSI.Driver) != rbd.PluginName {
		return SecretNeed{}, false
	}
	return SecretNeed{Namespace: ns, Name: name, Driver: secrets.CephRBDDriver, User: r.DeletionUser, AnyUser: r.AnyDeletionUser,
		Uses: []string{"deletion (" + secrets.AnnDeletionSecretName + ")"}}, true
}

// Replacement builds the CSI PV that replaces an in-tree PV from its
// translation csi (not modified: the replacement is a copy) and its findings:
// cleared of server-set fields and finalizers, reclaim policy Retain until a
// rewrite's last step, and the policy to restore recorded in
// AnnReclaimPolicy. The policy to restore is the one recorded by an earlier
// Retain step, else the PV's own; it stays Retain where a finding says the
// driver would not delete exactly the volume (KeepsRetain), and for an RBD
// volume whose deletion secret is unknown. A blocking finding is an error.
//
// The replacement stays deletable by external-provisioner, which from 1.31
// is the only component that deletes it: a pv.kubernetes.io/provisioned-by
// naming the in-tree plugin names the CSI driver instead (the original kept
// in plugin.AnnOriginalProvisionedBy), and the provisioner secret of sc, the
// PV's in-tree StorageClass (nil when it is gone), becomes the
// deletion-secret annotations, so the volume is deleted with the right
// credentials even after the class is replaced or removed. pvc is the bound
// claim, for secret templates; tr translates sc. Nothing is logged to
// logger: the class's own notices are logged where the class is translated,
// not for each of its PVs.
func Replacement(tr *translate.Translator, logger klog.Logger, pv, csi *v1.PersistentVolume, findings []plugin.Finding, sc *storagev1.StorageClass, pvc *v1.PersistentVolumeClaim) (PV, error) {
	if pv == nil || csi == nil || csi.Spec.CSI == nil || tr == nil {
		return PV{}, errors.New("rewrite.Replacement: a PV, its CSI translation and a translator are required")
	}
	return replacement(tr, pv, csi, findings, plugin.InTreeNameOfPV(pv), sc, pvc)
}

// replacement is Replacement with the in-tree plugin's name of pv known.
func replacement(tr *translate.Translator, pv, csi *v1.PersistentVolume, findings []plugin.Finding, inTree string, sc *storagev1.StorageClass, pvc *v1.PersistentVolumeClaim) (PV, error) {
	if csi == nil || csi.Spec.CSI == nil {
		return PV{}, errors.New("rewrite.Replacement: a PV, its CSI translation and a translator are required")
	}
	// The policy before the rewrite: the one a Retain step recorded, else
	// the PV's own.
	original := pv.Spec.PersistentVolumeReclaimPolicy
	if orig, ok := pv.Annotations[AnnReclaimPolicy]; ok {
		original = v1.PersistentVolumeReclaimPolicy(orig)
	}
	restore := original
	if restore == "" {
		restore = v1.PersistentVolumeReclaimRetain
	}
	var blockers, kept []string
	noSecret := false
	for _, f := range findings {
		if f.Severity == plugin.SeverityBlocker {
			blockers = append(blockers, f.Code+": "+f.Message)
		}
		if why, ok := KeepsRetain(f.Code); ok && restore != v1.PersistentVolumeReclaimRetain {
			restore = v1.PersistentVolumeReclaimRetain
			kept = append(kept, why)
		}
	}
	if len(blockers) > 0 {
		return PV{}, errors.New(strings.Join(blockers, "; "))
	}
	csi = pvcopy.ClearServerFields(csi.DeepCopy())
	if csi.Spec.ClaimRef != nil && pv.Spec.ClaimRef != nil {
		// The binder wrote it; the undo gives it back.
		csi.Spec.ClaimRef.ResourceVersion = pv.Spec.ClaimRef.ResourceVersion
	}
	KeepServedModes(pv, csi)
	csi.Finalizers = nil
	if csi.Annotations == nil {
		csi.Annotations = map[string]string{}
	}
	if by, ok := pv.Annotations[plugin.AnnProvisionedBy]; ok && by != csi.Spec.CSI.Driver {
		csi.Annotations[plugin.AnnOriginalProvisionedBy] = by
		csi.Annotations[plugin.AnnProvisionedBy] = csi.Spec.CSI.Driver
	}
	// CephFS volumes are static for Ceph CSI, which never deletes them (and
	// reads no deletion secret for them).
	var deletionUser string
	_, anyDeletionUser := pv.Annotations[secrets.AnnDeletionSecretName]
	if !anyDeletionUser && sc != nil && inTree != plugin.CephFSInTreePluginName &&
		(plugin.InTreeNameOfProvisioner(sc.Provisioner) == inTree || sc.Provisioner == csi.Spec.CSI.Driver) {
		// The class's own notices (parameters without a counterpart) are
		// the class's: logged where the class is translated, not again for
		// each of its PVs.
		ref, err := ProvisionerSecret(tr, logr.Discard(), pv, sc, pvc)
		if err != nil {
			return PV{}, fmt.Errorf("the provisioner secret of StorageClass %s, for deleting the volume: %w", sc.Name, err)
		}
		if ref != nil {
			deletionUser = ClassAdminID(sc)
			csi.Annotations[secrets.AnnDeletionSecretName] = ref.Name
			csi.Annotations[secrets.AnnDeletionSecretNamespace] = ref.Namespace
			// What the undo removes again.
			csi.Annotations[AnnAddedAnnotations] = secrets.AnnDeletionSecretName + "," + secrets.AnnDeletionSecretNamespace
		}
	}
	if _, ok := csi.Annotations[secrets.AnnDeletionSecretName]; !ok && inTree == rbd.PluginName && restore == v1.PersistentVolumeReclaimDelete {
		restore = v1.PersistentVolumeReclaimRetain
		kept = append(kept, noDeletionSecret(pv, sc)+", and Ceph CSI cannot delete an image without one")
		noSecret = true
	}
	csi.Annotations[AnnReclaimPolicy] = string(restore)
	csi.Annotations[AnnMigratedFrom] = inTree
	csi.Annotations[AnnPreRewritePolicy] = string(original)
	csi.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
	var hazard []string
	for _, k := range kept {
		hazard = append(hazard, hazardPrefix+k)
	}
	return PV{Name: pv.Name, Driver: csi.Spec.CSI.Driver, OriginalPolicy: original,
		RestorePolicy: restore, Hazard: strings.Join(hazard, "; "), CSI: csi, KeptWhy: kept, NoDeletionSecret: noSecret,
		DeletionUser: deletionUser, AnyDeletionUser: anyDeletionUser}, nil
}

// noDeletionSecret says why no deletion secret is known for an RBD PV
// whose StorageClass is sc (nil when it has none or it is gone).
func noDeletionSecret(pv *v1.PersistentVolume, sc *storagev1.StorageClass) string {
	switch {
	case sc == nil && pv.Spec.StorageClassName == "":
		return "the PV names no StorageClass and has no " + secrets.AnnDeletionSecretName + " annotation, so no secret to delete the image with is known"
	case sc == nil:
		return "its StorageClass " + pv.Spec.StorageClassName + " is gone (or not in the input), so no secret to delete the image with is known"
	case plugin.InTreeNameOfProvisioner(sc.Provisioner) != rbd.PluginName && plugin.InTreeNameOfDriver(sc.Provisioner) != rbd.PluginName:
		return "its StorageClass " + sc.Name + " is of provisioner " + sc.Provisioner + ", not of RBD, so no secret to delete the image with is known"
	}
	return "its StorageClass " + sc.Name + " names no admin (provisioner) secret"
}

// ProvisionerSecret is the provisioner secret external-provisioner resolves
// from the translated in-tree StorageClass sc for a PV and its claim (nil
// when the class names none). A class already replaced by its CSI form is
// read as it is.
func ProvisionerSecret(tr *translate.Translator, logger klog.Logger, pv *v1.PersistentVolume, sc *storagev1.StorageClass, pvc *v1.PersistentVolumeClaim) (*v1.SecretReference, error) {
	if sc == nil || tr == nil {
		return nil, nil
	}
	params := sc.Parameters
	if inTree := plugin.InTreeNameOfProvisioner(sc.Provisioner); tr.IsMigratableIntreePluginByName(inTree) {
		out, err := tr.TranslateInTreeStorageClassToCSI(logger, inTree, InTreeClass(sc))
		if err != nil {
			return nil, err
		}
		params = out.Parameters
	}
	name := ""
	if pv != nil {
		name = pv.Name
	}
	return secrets.Resolve(secrets.Provisioner, params, secrets.Claim{PVName: name, PVC: pvc})
}

// Rewrite builds the CSI PV that replaces an in-tree PV: its translation
// with what Replacement adds (the live class and claim where known, nil
// otherwise). It does not modify its arguments.
func Rewrite(tr *translate.Translator, logger klog.Logger, pv *v1.PersistentVolume, sc *storagev1.StorageClass, pvc *v1.PersistentVolumeClaim) (PV, error) {
	return rewritePV(tr, logger, pv, sc, pvc, false)
}

// RewriteAdopted is Rewrite for an in-tree PV whose volume its rewrite
// adopts into Ceph CSI's journal (package adopt): the replacement of a
// driver's own volume, without the migration handle's hazards. The journal
// names the image, not the handle, so Ceph CSI's delete finds exactly it;
// an adopted subvolume is deleted by Ceph CSI as the provisioner that made
// it was, so the static volume's Retain does not apply.
func RewriteAdopted(tr *translate.Translator, logger klog.Logger, pv *v1.PersistentVolume, sc *storagev1.StorageClass, pvc *v1.PersistentVolumeClaim) (PV, error) {
	return rewritePV(tr, logger, pv, sc, pvc, true)
}

// rewritePV translates pv and builds its replacement; adopted drops the
// migration handle's hazards, which an adopted volume does not have.
func rewritePV(tr *translate.Translator, logger klog.Logger, pv *v1.PersistentVolume, sc *storagev1.StorageClass, pvc *v1.PersistentVolumeClaim, adopted bool) (PV, error) {
	if tr == nil || pv == nil {
		return PV{}, errors.New("no translator or no PV")
	}
	csi, findings, inTree, err := tr.TranslateAndCheckPV(logger, pv)
	if err != nil {
		return PV{}, err
	}
	if adopted {
		findings = slices.DeleteFunc(findings, func(f plugin.Finding) bool {
			return f.Code == rbd.FindingHandleResolvesElsewhere || f.Code == cephfs.FindingNeverDeleted
		})
	}
	return replacement(tr, pv, csi, findings, inTree, sc, pvc)
}

// keepClaimRef gives a replacement the claimRef's resourceVersion of the PV
// it replaces (the replacement is built without it): the binder wrote it
// there, and the undo gives it back.
func keepClaimRef(repl, pv *v1.PersistentVolume) {
	if repl.Spec.ClaimRef != nil && pv.Spec.ClaimRef != nil {
		repl.Spec.ClaimRef.ResourceVersion = pv.Spec.ClaimRef.ResourceVersion
	}
}

// UndoReplacement is the in-tree PV that a CSI PV csimigrate's rewrite
// created came from: the library's reverse translation (which gives back
// the original pv.kubernetes.io/provisioned-by), without what the rewrite
// added, with reclaim policy Retain until the last step and the policy
// before the rewrite recorded for it in AnnReclaimPolicy. A PV without
// AnnPreRewritePolicy is refused (CodeNotRecorded). It does not modify cur.
func UndoReplacement(tr *translate.Translator, cur *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	if tr == nil || cur == nil {
		return nil, errors.New("no translator or no PV")
	}
	policy, ok := cur.Annotations[AnnPreRewritePolicy]
	if !ok {
		return nil, &Refusal{Code: CodeNotRecorded, Reason: "it has no annotation " + AnnPreRewritePolicy + " (an earlier csimigrate rewrote it without recording the reclaim policy and annotations to restore)",
			Remedy: "add the annotations " + AnnPreRewritePolicy + " (the policy before the rewrite) and, if the rewrite added external-provisioner's deletion-secret annotations, " + AnnAddedAnnotations + " naming them"}
	}
	src := cur
	// An adopted PV (package adopt) goes back to its migration handle
	// first: the in-tree form is that of the PV it replaced.
	if prev, _, ok, err := adopt.Unadopted(cur); ok {
		if err != nil {
			return nil, fmt.Errorf("the adopted volume's record: %w", err)
		}
		src = prev
	}
	in, err := tr.TranslateCSIPVToInTree(src.DeepCopy())
	if err == nil && plugin.InTreeNameOfPV(in) == "" {
		err = fmt.Errorf("the reverse translation gave no in-tree source")
	}
	if err != nil {
		return nil, fmt.Errorf("the volume has no in-tree form: %w", err)
	}
	pvcopy.ClearServerFields(in)
	keepClaimRef(in, cur)
	dropServedModes(in)
	in.Finalizers = nil
	for k := range strings.SplitSeq(cur.Annotations[AnnAddedAnnotations], ",") {
		delete(in.Annotations, k)
	}
	for _, k := range []string{AnnMigratedFrom, AnnPreRewritePolicy, AnnAddedAnnotations} {
		delete(in.Annotations, k)
	}
	if in.Annotations == nil {
		in.Annotations = map[string]string{}
	}
	in.Annotations[AnnReclaimPolicy] = policy
	in.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
	return in, nil
}

// dropServedModes removes from the in-tree form of a rewritten PV the
// overrides annotation that records only its access modes, as
// KeepServedModes kept them: the in-tree PV had those modes itself, so the
// undo gives it back as it was.
func dropServedModes(in *v1.PersistentVolume) {
	raw, ok := in.Annotations[plugin.AnnCSIOverrides]
	if !ok || in.Spec.RBD == nil {
		return
	}
	var o map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &o) != nil || len(o) != 1 {
		return
	}
	var modes []v1.PersistentVolumeAccessMode
	if json.Unmarshal(o["accessModes"], &modes) != nil || !slices.Equal(modes, in.Spec.AccessModes) || len(modes) == 0 {
		return
	}
	if !ServedAsTheyAre(in) {
		return // not what KeepServedModes keeps
	}
	delete(in.Annotations, plugin.AnnCSIOverrides)
}

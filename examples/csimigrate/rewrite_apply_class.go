package main

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/translate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// stateLabelSC names the StorageClass a state ConfigMap belongs to.
const stateLabelSC = "csimigrate.io/rewrite-of-storageclass"

// scStateName is the state ConfigMap name for a StorageClass.
func scStateName(sc string) string { return stateNameWith("csimigrate-rewrite-sc-", sc) }

// scState is what a run saves before it deletes an in-tree StorageClass
// (StorageClass parameters and provisioner cannot be updated): the
// replacement and what proves on resuming that it still applies.
type scState struct {
	StorageClass    string                  `json:"storageClass"`
	UID             types.UID               `json:"uid"`
	ResourceVersion string                  `json:"resourceVersion"`
	Replacement     *storagev1.StorageClass `json:"replacement"`
}

// classReplacement translates a live in-tree StorageClass into the class
// that replaces it: same name, labels and annotations (the default-class one
// included), the CSI provisioner and translated parameters.
func (a *applier) classReplacement(sc *storagev1.StorageClass) (*storagev1.StorageClass, error) {
	return classReplacementOf(a.tr, a.logger, sc)
}

// classReplacementOf is the class that replaces an in-tree class, as
// rewrite -apply creates it and rewrite prints it for review.
func classReplacementOf(tr *translate.Translator, logger klog.Logger, sc *storagev1.StorageClass) (*storagev1.StorageClass, error) {
	out, err := tr.TranslateInTreeStorageClassToCSI(logger, sc.Provisioner, sc)
	if err != nil {
		return nil, err
	}
	out.ResourceVersion, out.UID, out.CreationTimestamp, out.ManagedFields, out.Generation = "", "", metav1.Time{}, nil, 0
	clearSelfLink(&out.ObjectMeta)
	out.TypeMeta = metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[AnnMigratedFrom] = sc.Provisioner
	return out, nil
}

// rewriteClass replaces one in-tree StorageClass, resuming from whatever
// state the cluster is in: save the replacement, delete the class with uid
// and resourceVersion preconditions, create the replacement, remove the
// state. Claims created meanwhile that name the class wait (Pending) until
// it exists again.
func (a *applier) rewriteClass(ctx context.Context, t target) error {
	name := t.name
	scs := a.client.StorageV1().StorageClasses()
	cms := a.client.CoreV1().ConfigMaps(a.stateNS)
	for attempt := 0; attempt < 20; attempt++ {
		cur, err := scs.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cur, err = nil, nil
		}
		if err != nil {
			return err
		}
		cm, err := cms.Get(ctx, scStateName(name), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cm, err = nil, nil
		}
		if err != nil {
			return err
		}
		var state *scState
		if cm != nil {
			state = &scState{}
			if err := a.readState(cm, state); err != nil {
				return err
			}
			if state.Replacement == nil || state.Replacement.Name != name || state.StorageClass != name {
				return fmt.Errorf("ConfigMap %s/%s does not hold a replacement for StorageClass %s; nothing is created from it", a.stateNS, cm.Name, name)
			}
			if t.uid != "" && state.UID != t.uid {
				return fmt.Errorf("ConfigMap %s/%s was saved for uid %s, the reviewed StorageClass has uid %s; nothing is created from it", a.stateNS, cm.Name, state.UID, t.uid)
			}
		}
		switch {
		case cur == nil && state == nil:
			return refuse("not found, and no saved replacement (ConfigMap %s/%s)", a.stateNS, scStateName(name))
		case cur == nil:
			if err := a.step("storageclass/"+name, "create the CSI StorageClass ("+state.Replacement.Provisioner+")"); err != nil {
				return err
			}
			if _, err := scs.Create(ctx, state.Replacement.DeepCopy(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		case cur.Annotations[AnnMigratedFrom] != "" && !a.tr.IsMigratableIntreePluginByName(cur.Provisioner):
			if state == nil {
				return nil
			}
			if cur.Provisioner != state.Replacement.Provisioner {
				return fmt.Errorf("StorageClass %s has provisioner %s, ConfigMap %s/%s saved %s; not touching either", name, cur.Provisioner, a.stateNS, cm.Name, state.Replacement.Provisioner)
			}
			if err := a.step("storageclass/"+name, "remove the saved replacement"); err != nil {
				return err
			}
			uid := cm.UID
			if err := cms.Delete(ctx, cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		case !a.tr.IsMigratableIntreePluginByName(cur.Provisioner):
			return refuse("provisioner %s is not an in-tree plugin csimigrate translates", cur.Provisioner)
		case t.uid != "" && cur.UID != t.uid:
			return refuse("the live StorageClass has uid %s, the reviewed one %s (replaced since the review)", cur.UID, t.uid)
		case state != nil && (cur.UID != state.UID || cur.ResourceVersion != state.ResourceVersion):
			return fmt.Errorf("StorageClass %s changed after its replacement was saved in ConfigMap %s/%s (uid %s, resourceVersion %s; saved %s, %s); nothing is done with it: delete the ConfigMap and run again to rebuild it",
				name, a.stateNS, cm.Name, cur.UID, cur.ResourceVersion, state.UID, state.ResourceVersion)
		case state != nil:
			if err := a.step("storageclass/"+name, "delete the in-tree StorageClass (its PVs are not affected)"); err != nil {
				return err
			}
			uid, rv := cur.UID, cur.ResourceVersion
			if err := scs.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}}); err != nil &&
				!apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return err
			}
		default:
			r, err := a.classReplacement(cur)
			if err != nil {
				return refuse("%v", err)
			}
			if err := a.classSecretRefusal(ctx, cur, r); err != nil {
				return err
			}
			if err := a.step("storageclass/"+name, fmt.Sprintf("save the CSI replacement in ConfigMap %s/%s", a.stateNS, scStateName(name))); err != nil {
				return err
			}
			s := scState{StorageClass: name, UID: cur.UID, ResourceVersion: cur.ResourceVersion, Replacement: r}
			if _, err := a.writeState(ctx, scStateName(name), stateLabelSC, name, &s); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		}
	}
	return fmt.Errorf("storageclass/%s: did not converge", name)
}

// liveClassTargets lists the cluster's in-tree StorageClasses csimigrate
// translates, and those whose rewrite was interrupted after the delete.
func (a *applier) liveClassTargets(ctx context.Context) ([]target, error) {
	seen := map[string]bool{}
	var out []target
	list, err := a.client.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, sc := range list.Items {
		if a.tr.IsMigratableIntreePluginByName(sc.Provisioner) {
			seen[sc.Name] = true
			out = append(out, target{name: sc.Name})
		}
	}
	cms, err := a.client.CoreV1().ConfigMaps(a.stateNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=csimigrate"})
	if err != nil {
		return nil, err
	}
	for _, cm := range cms.Items {
		if sc := cm.Annotations[stateLabelSC]; sc != "" && !seen[sc] {
			seen[sc] = true
			out = append(out, target{name: sc})
		}
	}
	return out, nil
}

// rewriteClasses replaces the targeted StorageClasses one after the other
// (after the PVs, whose deletion secrets are read from their in-tree
// classes).
func (a *applier) rewriteClasses(ctx context.Context, targets []target) (result, error) {
	var r result
	for _, t := range targets {
		if r.record(a, "storageclass/"+t.name, a.rewriteClass(ctx, t)) {
			return r, errInterrupted
		}
	}
	return r, errors.Join(r.errs...)
}

// dryRunClasses sends each step of every class rewrite with server-side
// dry run (the replacement under a temporary name).
func (a *applier) dryRunClasses(ctx context.Context, targets []target) error {
	dry := []string{metav1.DryRunAll}
	return dryRunEach(targets, func(t target) []error {
		cur, err := a.client.StorageV1().StorageClasses().Get(ctx, t.name, metav1.GetOptions{})
		if err != nil {
			return []error{fmt.Errorf("storageclass/%s: %w", t.name, err)}
		}
		if !a.tr.IsMigratableIntreePluginByName(cur.Provisioner) {
			return nil
		}
		r, err := a.classReplacement(cur)
		if err == nil {
			err = a.classSecretRefusal(ctx, cur, r)
		}
		if err != nil {
			return []error{fmt.Errorf("storageclass/%s: %w", t.name, err)}
		}
		var errs []error
		if err := a.client.StorageV1().StorageClasses().Delete(ctx, t.name, metav1.DeleteOptions{DryRun: dry}); err != nil {
			errs = append(errs, fmt.Errorf("storageclass/%s: delete: %w", t.name, err))
		}
		r.Name = "csimigrate-dry-run-" + string(cur.UID)
		if _, err := a.client.StorageV1().StorageClasses().Create(ctx, r, metav1.CreateOptions{DryRun: dry}); err != nil {
			errs = append(errs, fmt.Errorf("storageclass/%s: create: %w", t.name, err))
		} else {
			a.say("storageclass/%s: delete and create as %s would be accepted\n", t.name, r.Provisioner)
		}
		return errs
	})
}

// classSecretRefusal is why the rewrite leaves an in-tree RBD class alone
// for its admin secret, which the replacement names as its provisioner,
// controller-expand and node-stage secret: missing, without "key", or
// without the adminId of a non-admin adminId parameter (Ceph CSI reads the
// migration user only from the secret and would connect as client.admin
// with that user's key). The plan reports the same.
func (a *applier) classSecretRefusal(ctx context.Context, cur, r *storagev1.StorageClass) error {
	if cur.Provisioner != rbd.PluginName {
		return nil
	}
	ref, user, err := classAdminSecret(r)
	if err != nil || ref == nil {
		return refuse("the translated class names no usable provisioner secret: %v", err)
	}
	s, err := a.client.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return &refusal{reason: fmt.Sprintf("its admin secret %s/%s does not exist", ref.Namespace, ref.Name),
			remedy: "create it with the Ceph user's key under \"key\" (and adminId for a user other than admin)"}
	case err != nil:
		return fmt.Errorf("reading its admin secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	fixes, err := secrets.CephMigrationSecretFixes(s, user)
	if err != nil {
		return &refusal{reason: fmt.Sprintf("its admin secret %s/%s: %v", ref.Namespace, ref.Name, err), remedy: "put the Ceph user's key under \"key\""}
	}
	for _, f := range fixes {
		return &refusal{reason: fmt.Sprintf("adminId is %q, but Ceph CSI reads the migration user only from the admin secret's adminId: the CSI class would provision as client.admin with that user's key and fail", user),
			remedy: fmt.Sprintf("add %s: %s to Secret %s/%s", f.Field, f.Value, ref.Namespace, ref.Name)}
	}
	return nil
}

// classAdminSecret is the admin secret of a translated in-tree RBD class
// (its provisioner, controller-expand and node-stage secret) and the
// migration user it must name (the class's adminId).
func classAdminSecret(translated *storagev1.StorageClass) (*v1.SecretReference, string, error) {
	ref, err := secrets.Resolve(secrets.Provisioner, translated.Parameters, secrets.Claim{})
	return ref, translated.Parameters["adminId"], err
}

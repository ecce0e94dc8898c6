package apply

import (
	"context"
	"errors"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/secrets"
)

// classReplacement translates a live in-tree StorageClass into the class
// that replaces it: same name, labels and annotations (the default-class one
// included), the CSI provisioner and translated parameters.
func (a *Writer) classReplacement(sc *storagev1.StorageClass) (*storagev1.StorageClass, error) {
	return rewrite.ClassReplacement(a.tr, a.logger, sc)
}

// LiveClassTargets lists the cluster's in-tree StorageClasses csimigrate
// translates, and those whose rewrite was interrupted after the delete.
func (a *Writer) LiveClassTargets(ctx context.Context) ([]Target, error) {
	seen := map[string]bool{}
	var out []Target
	list, err := a.client.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		if sc := &list.Items[i]; a.IsSourceClass(sc) {
			seen[sc.Name] = true
			out = append(out, Target{Name: sc.Name})
		}
	}
	cms, err := a.client.CoreV1().ConfigMaps(a.o.StateNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=csimigrate"})
	if err != nil {
		return nil, err
	}
	for _, cm := range cms.Items {
		if sc := cm.Annotations[stateLabelSC]; sc != "" && !seen[sc] {
			seen[sc] = true
			out = append(out, Target{Name: sc})
		}
	}
	return out, nil
}

// Classes replaces the target StorageClasses one after the other. Run it
// after PVs: the PVs' deletion secrets are read from their in-tree classes.
// Refusals and errors are as PVs reports them.
func (a *Writer) Classes(ctx context.Context, targets []Target) (Result, error) {
	if a.o.DryRun {
		return a.dryRunAll(targets, rewrite.ClassRef, func(t Target) error { return a.dryRunClass(ctx, t) })
	}
	var r Result
	for _, t := range targets {
		if r.record(a, rewrite.ClassRef(t.Name), runToEnd(ctx, a.Class(t))) {
			return r, ErrWriteLimit
		}
	}
	return r, errors.Join(r.errs...)
}

// DryRunClasses runs every check and sends each write of every target
// StorageClass's replacement with server-side dry run (the replacement under
// a temporary name). It writes nothing. Each refusal is reported through
// Events.Refused, as the real run reports it.
func (a *Writer) DryRunClasses(ctx context.Context, targets []Target) error {
	_, err := a.dryRunAll(targets, rewrite.ClassRef, func(t Target) error { return a.dryRunClass(ctx, t) })
	return err
}

// dryRunClass is one target class's dry run: its checks' refusal, or the
// errors of the steps the API server would not accept, joined.
func (a *Writer) dryRunClass(ctx context.Context, t Target) error {
	dry := []string{metav1.DryRunAll}
	cur, err := a.client.StorageV1().StorageClasses().Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if !a.IsSourceClass(cur) {
		a.note(rewrite.ClassRef(t.Name), "not "+a.o.Direction.AScope()+" StorageClass; nothing to do")
		return nil
	}
	if t.UID != "" && cur.UID != t.UID {
		return refuse(rewrite.CodeReplacedSinceReview, "the live StorageClass has uid %s, the reviewed one %s (replaced since the review)", cur.UID, t.UID)
	}
	r, err := a.classChecks(ctx, cur)
	if err != nil {
		return err
	}
	var errs []error
	if err := a.client.StorageV1().StorageClasses().Delete(ctx, t.Name, metav1.DeleteOptions{DryRun: dry}); err != nil {
		errs = append(errs, fmt.Errorf("delete: %w", err))
	}
	r.Name = "csimigrate-dry-run-" + string(cur.UID)
	if _, err := a.client.StorageV1().StorageClasses().Create(ctx, r, metav1.CreateOptions{DryRun: dry}); err != nil {
		errs = append(errs, fmt.Errorf("create: %w", err))
	} else {
		a.note(rewrite.ClassRef(t.Name), "delete and create as "+r.Provisioner+" would be accepted")
	}
	return errors.Join(errs...)
}

// classSecretRefusal is why the rewrite leaves an in-tree RBD class alone
// for its admin secret, which the replacement names as its provisioner,
// controller-expand and node-stage secret, judged by the plan's rule
// (secrets.CephCSISecretReady): missing, without "key" or userID/userKey, or
// without the adminId of a non-admin adminId parameter (Ceph CSI reads the
// migration user only from the secret and would connect as client.admin
// with that user's key). The plan reports the same.
func (a *Writer) classSecretRefusal(ctx context.Context, cur, r *storagev1.StorageClass) error {
	if plugin.InTreeNameOfProvisioner(cur.Provisioner) != rbd.PluginName {
		return nil
	}
	ref, user, err := classAdminSecret(r)
	if err != nil || ref == nil {
		return refuse(rewrite.CodeSecretNotReady, "the translated class names no usable provisioner secret: %v", err)
	}
	s, err := a.client.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return &rewrite.Refusal{Code: rewrite.CodeSecretMissing, Reason: fmt.Sprintf("its admin secret %s/%s does not exist", ref.Namespace, ref.Name),
			Remedy: "create it with the Ceph user's key under \"key\" (and adminId for a user other than admin)"}
	case err != nil:
		return fmt.Errorf("reading its admin secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	fixes, err := secrets.CephCSISecretReady(s, secrets.CephRBDDriver, user)
	if err != nil {
		return &rewrite.Refusal{Code: rewrite.CodeSecretNotReady, Reason: fmt.Sprintf("its admin secret %s/%s %s", ref.Namespace, ref.Name, rewrite.Problem(err)),
			Remedy: "put the Ceph user's key under \"key\" (or userID and userKey)"}
	}
	if len(fixes) > 0 {
		f := fixes[0]
		if f.Field != secrets.CephMigrationUserKey {
			return &rewrite.Refusal{Code: rewrite.CodeSecretNotReady, Reason: fmt.Sprintf("its admin secret %s/%s: %s", ref.Namespace, ref.Name, f.Reason),
				Remedy: fmt.Sprintf("give Secret %s/%s %s: %s and that user's key", ref.Namespace, ref.Name, f.Field, f.Value)}
		}
		return &rewrite.Refusal{Code: rewrite.CodeSecretNotReady, Reason: fmt.Sprintf("adminId is %q, but Ceph CSI reads the migration user only from the admin secret's adminId: the CSI class would provision as client.admin with that user's key and fail", user),
			Remedy: fmt.Sprintf("add %s: %s to Secret %s/%s", f.Field, f.Value, ref.Namespace, ref.Name)}
	}
	return nil
}

// classAdminSecret is rewrite.ClassAdminSecret.
var classAdminSecret = rewrite.ClassAdminSecret

// ReviewClass runs every check the Writer makes on a live StorageClass of
// its direction before the first write, and returns the class that would
// replace it; it writes nothing.
func (a *Writer) ReviewClass(ctx context.Context, cur *storagev1.StorageClass) (*storagev1.StorageClass, error) {
	if cur == nil || !a.IsSourceClass(cur) {
		return nil, fmt.Errorf("not %s StorageClass", a.o.Direction.AScope())
	}
	return a.classChecks(ctx, cur)
}

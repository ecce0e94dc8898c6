package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	storagev1 "k8s.io/api/storage/v1"

	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/translate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// stateLabelSC names the StorageClass a state ConfigMap belongs to.
	stateLabelSC = "csimigrate.io/rewrite-of-storageclass"
	// AnnOriginalClass records, on a CSI StorageClass the rewrite created,
	// the in-tree class it replaced: a StorageClass in JSON without its
	// metadata (provisioner, parameters and every field the translation
	// may change). The undo creates that class again, with the CSI class's
	// name, labels and annotations.
	AnnOriginalClass = "csimigrate.io/original-storageclass"
)

// scStateName is the state ConfigMap name for a StorageClass.
func scStateName(sc string) string { return stateNameWith("csimigrate-rewrite-sc-", sc) }

// scState is what a run saves before it deletes a StorageClass (a class's
// parameters and provisioner cannot be updated): the replacement and what
// proves on resuming that it still applies.
type scState struct {
	StorageClass string `json:"storageClass"`
	// Undo says the state is an undo's: the class deleted is a CSI class
	// csimigrate created, the replacement the in-tree class it replaced.
	Undo            bool                    `json:"undo,omitempty"`
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
	in := rewrite.InTreeClass(sc)
	out, err := tr.TranslateInTreeStorageClassToCSI(logger, in.Provisioner, in)
	if err != nil {
		return nil, err
	}
	out.ResourceVersion, out.UID, out.CreationTimestamp, out.ManagedFields, out.Generation = "", "", metav1.Time{}, nil, 0
	clearSelfLink(&out.ObjectMeta)
	out.TypeMeta = metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	var added []string
	for _, k := range slices.Sorted(maps.Keys(out.Annotations)) {
		if _, ok := sc.Annotations[k]; !ok {
			added = append(added, k)
		}
	}
	if len(added) > 0 {
		// What the undo removes again.
		out.Annotations[AnnAddedAnnotations] = strings.Join(added, ",")
	}
	out.Annotations[AnnMigratedFrom] = sc.Provisioner
	orig, err := json.Marshal(storagev1.StorageClass{Provisioner: sc.Provisioner, Parameters: sc.Parameters, ReclaimPolicy: sc.ReclaimPolicy,
		MountOptions: sc.MountOptions, AllowVolumeExpansion: sc.AllowVolumeExpansion, VolumeBindingMode: sc.VolumeBindingMode, AllowedTopologies: sc.AllowedTopologies})
	if err != nil {
		return nil, err
	}
	out.Annotations[AnnOriginalClass] = string(orig)
	return out, nil
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
	for i := range list.Items {
		if sc := &list.Items[i]; a.isSourceClass(sc) {
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
		if r.record(a, "storageclass/"+t.name, runSteps(ctx, a, a.newClassRun(t), classSteps)) {
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
		if !a.isSourceClass(cur) {
			return nil
		}
		r, err := a.classChecks(ctx, cur)
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
// controller-expand and node-stage secret, judged by the plan's rule
// (secrets.CephCSISecretReady): missing, without "key" or userID/userKey, or
// without the adminId of a non-admin adminId parameter (Ceph CSI reads the
// migration user only from the secret and would connect as client.admin
// with that user's key). The plan reports the same.
func (a *applier) classSecretRefusal(ctx context.Context, cur, r *storagev1.StorageClass) error {
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
		return &refusal{Code: rewrite.CodeSecretMissing, Reason: fmt.Sprintf("its admin secret %s/%s does not exist", ref.Namespace, ref.Name),
			Remedy: "create it with the Ceph user's key under \"key\" (and adminId for a user other than admin)"}
	case err != nil:
		return fmt.Errorf("reading its admin secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	fixes, err := secrets.CephCSISecretReady(s, secrets.CephRBDDriver, user)
	if err != nil {
		return &refusal{Code: rewrite.CodeSecretNotReady, Reason: fmt.Sprintf("its admin secret %s/%s %s", ref.Namespace, ref.Name, rewrite.Problem(err)),
			Remedy: "put the Ceph user's key under \"key\" (or userID and userKey)"}
	}
	if len(fixes) > 0 {
		f := fixes[0]
		if f.Field != secrets.CephMigrationUserKey {
			return &refusal{Code: rewrite.CodeSecretNotReady, Reason: fmt.Sprintf("its admin secret %s/%s: %s", ref.Namespace, ref.Name, f.Reason),
				Remedy: fmt.Sprintf("give Secret %s/%s %s: %s and that user's key", ref.Namespace, ref.Name, f.Field, f.Value)}
		}
		return &refusal{Code: rewrite.CodeSecretNotReady, Reason: fmt.Sprintf("adminId is %q, but Ceph CSI reads the migration user only from the admin secret's adminId: the CSI class would provision as client.admin with that user's key and fail", user),
			Remedy: fmt.Sprintf("add %s: %s to Secret %s/%s", f.Field, f.Value, ref.Namespace, ref.Name)}
	}
	return nil
}

// classAdminSecret is rewrite.ClassAdminSecret.
var classAdminSecret = rewrite.ClassAdminSecret

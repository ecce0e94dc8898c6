package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
)

// The adoption of CSI PVs that carry a migration handle (written by an
// earlier rewrite, or by Kubernetes' own migration before 1.31), and its
// undo: the same steps as the rewrite, replacing the PV by itself with
// Ceph CSI's own volume ID (or back).

// notInUse refuses a PV that pods use: the adoption and its undo change the
// volume handle the kubelet and the attach/detach controller track.
func (a *Writer) notInUse(ctx context.Context, cur *v1.PersistentVolume) error {
	c := cur.Spec.ClaimRef
	if c == nil {
		return nil
	}
	pods, err := a.podsUsing(ctx, c.Namespace, c.Name)
	if err != nil || len(pods) == 0 {
		return err
	}
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	return refuse(rewrite.CodeInUse, "in use by pods %s of claim %s/%s: the adoption changes the volume handle the kubelet tracks; stop them first",
		strings.Join(names, ", "), c.Namespace, c.Name)
}

// forCreate is a copy of a live PV without what the API server sets, to be
// created again (the claimRef's resourceVersion kept, as the binder wrote
// it).
func forCreate(pv *v1.PersistentVolume) *v1.PersistentVolume {
	out := pv.DeepCopy()
	out.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"}
	out.ResourceVersion, out.UID, out.Generation = "", "", 0
	//lint:ignore SA1019 clearing the deprecated field is the point
	out.SelfLink = ""
	out.CreationTimestamp = metav1.Time{}
	out.DeletionTimestamp, out.DeletionGracePeriodSeconds = nil, nil
	out.ManagedFields, out.Finalizers = nil, nil
	out.Status = v1.PersistentVolumeStatus{}
	return out
}

// checkAdopt runs every check on a CSI PV with a migration handle before
// the adoption's first write, and builds the adopted PV.
func (a *Writer) checkAdopt(ctx context.Context, cur *v1.PersistentVolume) (*checkedPV, error) {
	pvc, err := a.claimChecks(ctx, cur)
	if err != nil {
		return nil, err
	}
	if err := a.notInUse(ctx, cur); err != nil {
		return nil, err
	}
	ad, err := a.adoptionOf(ctx, cur, cur, false)
	if err != nil {
		return nil, err
	}
	if ad == nil {
		return nil, &rewrite.Refusal{Code: rewrite.CodeNotAdoptable, Reason: "no Ceph access was given to adopt it"}
	}
	if ad.why != "" {
		form := "it keeps its migration handle: "
		if ad.subvol != nil || plugin.InTreeNameOfDriver(cur.Spec.CSI.Driver) == plugin.CephFSInTreePluginName {
			form = "it stays a static volume: "
		}
		return nil, &rewrite.Refusal{Code: rewrite.CodeNotAdoptable, Reason: form + ad.why}
	}
	c := &checkedPV{uid: cur.UID, pvc: pvc, adoption: ad}
	if c.repl, c.kept, err = a.buildAdopt(cur, c); err != nil {
		return nil, asRefusal(err)
	}
	a.note(rewrite.PVRef(cur.Name), ad.summary(c.repl))
	return c, nil
}

// buildAdopt is the adopted form of a CSI PV with a migration handle, as it
// is now (adoptedForm: its reclaim policy recorded by step 1 is restored
// last, or kept at Retain where Ceph CSI's delete would not remove exactly
// its volume).
func (a *Writer) buildAdopt(cur *v1.PersistentVolume, c *checkedPV) (*v1.PersistentVolume, string, error) {
	orig := cur.Annotations[rewrite.AnnReclaimPolicy]
	if orig == "" {
		orig = string(cur.Spec.PersistentVolumeReclaimPolicy)
	}
	out, kept, d, err := a.adoptedForm(forCreate(cur), orig, "", c.adoption)
	switch {
	case err != nil:
		return nil, "", err
	case c.adoption == nil:
		return nil, "", errors.New("not adoptable: no Ceph access was given to adopt it")
	case c.adoption.why != "":
		return nil, "", errors.New("not adoptable: " + c.adoption.why)
	case d.Form != adopt.FormNative || d.PV == nil:
		return nil, "", fmt.Errorf("not adoptable: %s", strings.Join(d.Why, "; "))
	}
	out.Annotations[adopt.AnnAdoptedCSI] = "true"
	return out, kept, nil
}

// checkUnadopt runs every check on a PV adopted from a CSI PV before the
// undo's first write, and builds the CSI PV with its migration handle.
func (a *Writer) checkUnadopt(ctx context.Context, cur *v1.PersistentVolume) (*checkedPV, error) {
	pvc, err := a.claimChecks(ctx, cur)
	if err != nil {
		return nil, err
	}
	if err := a.notInUse(ctx, cur); err != nil {
		return nil, err
	}
	j, err := journalOf(cur)
	if err != nil || j == nil {
		return nil, asRefusal(fmt.Errorf("its journal record: %v", err))
	}
	if _, err := a.journalState(ctx, *j); err != nil {
		return nil, asRefusal(err)
	}
	c := &checkedPV{uid: cur.UID, pvc: pvc}
	if c.repl, c.kept, err = a.buildUnadopt(cur, c); err != nil {
		return nil, asRefusal(err)
	}
	return c, nil
}

// buildUnadopt is the CSI PV an adopted one replaced, as recorded on it.
func (a *Writer) buildUnadopt(cur *v1.PersistentVolume, _ *checkedPV) (*v1.PersistentVolume, string, error) {
	prev, _, ok, err := adopt.Unadopted(cur)
	if err != nil {
		return nil, "", err
	}
	if !ok {
		return nil, "", fmt.Errorf("pv/%s records no adoption", cur.Name)
	}
	return forCreate(prev), "", nil
}

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/plugins"
	"github.com/csimigrate/csimigrate/translate"
)

// The rewrite keeps its state in the cluster, never in a local file: the
// PVs themselves and, between deleting an in-tree PV and creating its CSI
// replacement, a ConfigMap holding the replacement's manifest.
const (
	stateKey   = "pv.json"
	stateLabel = "csimigrate.io/rewrite-of"
)

// stateName is the ConfigMap name for a PV.
func stateName(pv string) string {
	n := "csimigrate-rewrite-" + pv
	if len(n) <= 253 {
		return n
	}
	sum := sha256.Sum256([]byte(pv))
	return "csimigrate-rewrite-" + hex.EncodeToString(sum[:16])
}

var errInterrupted = errors.New("interrupted (step limit)")

// applier carries out the rewrite against a live cluster. Every call to
// rewrite observes the cluster and takes the next step, so it can be run
// again after an interruption at any point and converges to the same state.
type applier struct {
	client    kubernetes.Interface
	tr        *translate.Translator
	logger    klog.Logger
	stateNS   string
	out       io.Writer
	stepLimit int // tests: stop after this many mutating steps (0: no limit)
	steps     int
}

func (a *applier) step(pv, what string) error {
	if a.stepLimit > 0 && a.steps >= a.stepLimit {
		return errInterrupted
	}
	a.steps++
	fmt.Fprintf(a.out, "pv/%s: %s\n", pv, what)
	return nil
}

// prepare builds the CSI replacement of a live in-tree PV.
func (a *applier) prepare(cur *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	r, err := replacement(a.tr, a.logger, cur)
	return r.CSI, err
}

// rewrite replaces one PV, resuming from whatever state the cluster is in.
func (a *applier) rewrite(ctx context.Context, name, driver string) error {
	pvs := a.client.CoreV1().PersistentVolumes()
	cms := a.client.CoreV1().ConfigMaps(a.stateNS)
	for attempt := 0; attempt < 50; attempt++ {
		cur, err := pvs.Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		cm, cmErr := cms.Get(ctx, stateName(name), metav1.GetOptions{})
		if cmErr != nil && !apierrors.IsNotFound(cmErr) {
			return cmErr
		}
		haveCM := cmErr == nil
		switch {
		case apierrors.IsNotFound(err) && !haveCM:
			return fmt.Errorf("pv/%s: not found, and no saved replacement (ConfigMap %s/%s)", name, a.stateNS, stateName(name))
		case apierrors.IsNotFound(err):
			var csi v1.PersistentVolume
			if err := json.Unmarshal([]byte(cm.Data[stateKey]), &csi); err != nil {
				return fmt.Errorf("pv/%s: saved replacement in ConfigMap %s/%s: %w", name, a.stateNS, cm.Name, err)
			}
			if err := a.step(name, "create the CSI PV (reclaim policy Retain for now)"); err != nil {
				return err
			}
			if _, err := pvs.Create(ctx, &csi, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		case cur.Spec.CSI != nil && cur.Spec.CSI.Driver == driver:
			if want, ok := cur.Annotations[AnnReclaimPolicy]; ok {
				if err := a.step(name, "restore reclaim policy "+want); err != nil {
					return err
				}
				upd := cur.DeepCopy()
				upd.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimPolicy(want)
				delete(upd.Annotations, AnnReclaimPolicy)
				if _, err := pvs.Update(ctx, upd, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
					return err
				}
				continue
			}
			if haveCM {
				if err := a.step(name, "remove the saved replacement"); err != nil {
					return err
				}
				if err := cms.Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return err
				}
				continue
			}
			return nil
		case plugins.InTreeNameOfPV(cur) == "":
			return fmt.Errorf("pv/%s: neither the in-tree PV nor a %s PV; not touching it", name, driver)
		case cur.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain:
			if cur.DeletionTimestamp != nil {
				return fmt.Errorf("pv/%s: being deleted with reclaim policy %s; not touching it", name, cur.Spec.PersistentVolumeReclaimPolicy)
			}
			if err := a.step(name, "set reclaim policy Retain (was "+string(cur.Spec.PersistentVolumeReclaimPolicy)+")"); err != nil {
				return err
			}
			upd := cur.DeepCopy()
			if upd.Annotations == nil {
				upd.Annotations = map[string]string{}
			}
			upd.Annotations[AnnReclaimPolicy] = string(cur.Spec.PersistentVolumeReclaimPolicy)
			upd.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
			// The update carries cur's resourceVersion: it applies to this
			// exact object or fails.
			if _, err := pvs.Update(ctx, upd, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
				return err
			}
		case !haveCM:
			csi, err := a.prepare(cur)
			if err != nil {
				return fmt.Errorf("pv/%s: %w", name, err)
			}
			b, err := json.Marshal(csi)
			if err != nil {
				return err
			}
			if err := a.step(name, fmt.Sprintf("save the CSI replacement in ConfigMap %s/%s", a.stateNS, stateName(name))); err != nil {
				return err
			}
			state := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: stateName(name), Namespace: a.stateNS, Labels: map[string]string{"app.kubernetes.io/managed-by": "csimigrate"},
				Annotations: map[string]string{stateLabel: name}}, Data: map[string]string{stateKey: string(b)}}
			if _, err := cms.Create(ctx, state, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		case cur.DeletionTimestamp == nil:
			// Retain is in force on this exact object (uid precondition).
			if err := a.step(name, "delete the in-tree PV object (Retain: the volume is kept)"); err != nil {
				return err
			}
			uid, rv := cur.UID, cur.ResourceVersion
			if err := pvs.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}}); err != nil &&
				!apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return err
			}
		case len(cur.Finalizers) > 0:
			if err := a.step(name, fmt.Sprintf("remove finalizers %v from the deleted in-tree PV (Retain is in force)", cur.Finalizers)); err != nil {
				return err
			}
			upd := cur.DeepCopy()
			upd.Finalizers = nil
			if _, err := pvs.Update(ctx, upd, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return err
			}
		default:
			time.Sleep(100 * time.Millisecond) // deletion in progress
		}
	}
	return fmt.Errorf("pv/%s: did not converge", name)
}

// rewriteAll rewrites every in-tree PV the translator handles.
func (a *applier) rewriteAll(ctx context.Context) (int, error) {
	list, err := a.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	names := map[string]string{}
	for i := range list.Items {
		pv := &list.Items[i]
		if name := plugins.InTreeNameOfPV(pv); name != "" && a.tr.IsPVMigratable(pv) {
			names[pv.Name], _ = a.tr.GetCSINameFromInTreeName(name)
		}
	}
	// PVs whose rewrite was interrupted after the delete exist only as
	// saved replacements.
	cms, err := a.client.CoreV1().ConfigMaps(a.stateNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=csimigrate"})
	if err != nil {
		return 0, err
	}
	for _, cm := range cms.Items {
		var csi v1.PersistentVolume
		if pv := cm.Annotations[stateLabel]; pv != "" && json.Unmarshal([]byte(cm.Data[stateKey]), &csi) == nil && csi.Spec.CSI != nil {
			names[pv] = csi.Spec.CSI.Driver
		}
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if err := a.rewrite(ctx, name, names[name]); err != nil {
			if errors.Is(err, errInterrupted) {
				return len(names), err
			}
			errs = append(errs, err)
		}
	}
	return len(names), errors.Join(errs...)
}

// dryRun sends each step of every rewrite to the API server with
// server-side dry run (the replacement is validated under a temporary name,
// since the original still exists).
func (a *applier) dryRun(ctx context.Context) error {
	list, err := a.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	dry := []string{metav1.DryRunAll}
	var errs []error
	for i := range list.Items {
		cur := &list.Items[i]
		if plugins.InTreeNameOfPV(cur) == "" || !a.tr.IsPVMigratable(cur) {
			continue
		}
		csi, err := a.prepare(cur)
		if err != nil {
			errs = append(errs, fmt.Errorf("pv/%s: %w", cur.Name, err))
			continue
		}
		upd := cur.DeepCopy()
		upd.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
		if _, err := a.client.CoreV1().PersistentVolumes().Update(ctx, upd, metav1.UpdateOptions{DryRun: dry}); err != nil {
			errs = append(errs, fmt.Errorf("pv/%s: Retain: %w", cur.Name, err))
		}
		if err := a.client.CoreV1().PersistentVolumes().Delete(ctx, cur.Name, metav1.DeleteOptions{DryRun: dry}); err != nil {
			errs = append(errs, fmt.Errorf("pv/%s: delete: %w", cur.Name, err))
		}
		csi.Name = "csimigrate-dry-run-" + string(cur.UID)
		if _, err := a.client.CoreV1().PersistentVolumes().Create(ctx, csi, metav1.CreateOptions{DryRun: dry}); err != nil {
			errs = append(errs, fmt.Errorf("pv/%s: create CSI PV: %w", cur.Name, err))
		} else {
			fmt.Fprintf(a.out, "pv/%s: Retain, delete and create as %s would be accepted\n", cur.Name, csi.Spec.CSI.Driver)
		}
	}
	return errors.Join(errs...)
}

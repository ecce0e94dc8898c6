package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// undoReplacement is the in-tree PV that a CSI PV csimigrate's rewrite
// created came from: the library's reverse translation (which gives back
// the original pv.kubernetes.io/provisioned-by), without what the rewrite
// added, reclaim policy Retain until the last step and the policy before the
// rewrite recorded for it in AnnReclaimPolicy.
func undoReplacement(tr *translate.Translator, cur *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	policy, ok := cur.Annotations[AnnPreRewritePolicy]
	if !ok {
		return nil, &refusal{Code: rewrite.CodeNotRecorded, Reason: "it has no annotation " + AnnPreRewritePolicy + " (an earlier csimigrate rewrote it without recording the reclaim policy and annotations to restore)",
			Remedy: "add the annotations " + AnnPreRewritePolicy + " (the policy before the rewrite) and, if the rewrite added external-provisioner's deletion-secret annotations, " + AnnAddedAnnotations + " naming them"}
	}
	in, err := tr.TranslateCSIPVToInTree(cur)
	if err == nil && plugin.InTreeNameOfPV(in) == "" {
		err = fmt.Errorf("the reverse translation gave no in-tree source")
	}
	if err != nil {
		return nil, fmt.Errorf("the volume has no in-tree form: %w", err)
	}
	cleanPV(in)
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

// checkUndo runs every check on a CSI PV csimigrate created before the
// undo's first write to it, and builds the in-tree PV that replaces it.
func (a *applier) checkUndo(ctx context.Context, cur *v1.PersistentVolume) (*checks, error) {
	pvc, err := a.claimChecks(ctx, cur)
	if err != nil {
		return nil, err
	}
	in, err := undoReplacement(a.tr, cur)
	if err != nil {
		return nil, asRefusal(err)
	}
	if err := a.inTreeServed(plugin.InTreeNameOfPV(in)); err != nil {
		return nil, err
	}
	// The in-tree PV must be the same volume to the kubelet, the
	// attach/detach controller and the driver: they translate it.
	driver, handle, err := a.identity(in)
	if err != nil {
		return nil, refuse(rewrite.CodeNotTranslatable, "its in-tree form does not translate: %v", err)
	}
	if driver != cur.Spec.CSI.Driver || handle != cur.Spec.CSI.VolumeHandle {
		return nil, refuse(rewrite.CodeHandleChanges, "its in-tree form translates to %s %q, not to this PV's %s %q: Kubernetes would know the volume by another name", driver, handle, cur.Spec.CSI.Driver, cur.Spec.CSI.VolumeHandle)
	}
	if err := a.inUseRefusal(ctx, cur, in, driver, handle); err != nil {
		return nil, err
	}
	return &checks{uid: cur.UID, pvc: pvc, repl: in}, nil
}

// buildUndo is the in-tree replacement of a CSI PV csimigrate created.
func (a *applier) buildUndo(cur *v1.PersistentVolume, _ *checks) (*v1.PersistentVolume, string, error) {
	in, err := undoReplacement(a.tr, cur)
	return in, "", err
}

// asRefusal makes err a refusal unless it is one.
func asRefusal(err error) error {
	if ref := (*refusal)(nil); errors.As(err, &ref) {
		return err
	}
	return refuse(rewrite.CodeNotTranslatable, "%v", err)
}

// removedInTree maps the in-tree plugins Kubernetes removed without a
// migration that still serves their PVs to the minor release that removed
// them: the RBD and CephFS plugins went in 1.31 (CephFS was never migrated,
// and RBD's migration went with its plugin). vSphere's in-tree PVs are still
// served through CSI migration (a 1.36 kubelet mounts them: the online
// kubelet test).
var removedInTree = map[string]int{plugin.RBDInTreePluginName: 31, plugin.CephFSInTreePluginName: 31}

// inTreeServed refuses an undo to an in-tree plugin that the cluster's
// Kubernetes (its API server's version) no longer has.
func (a *applier) inTreeServed(plugin string) error {
	removed, ok := removedInTree[plugin]
	if !ok {
		return nil
	}
	minor, err := a.serverMinor()
	if err != nil {
		return err
	}
	if minor >= removed {
		return &refusal{Code: rewrite.CodePluginRemoved, Reason: fmt.Sprintf("the API server is Kubernetes 1.%d, and 1.%d removed the in-tree plugin %s: no kubelet would mount the in-tree PV", minor, removed, plugin),
			Remedy: "keep the CSI PV and fix the driver's setup (csimigrate plan lists the Ceph CSI config map and the Secrets it needs)"}
	}
	return nil
}

// serverMinor is the API server's minor version, read once per run.
func (a *applier) serverMinor() (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.minor > 0 {
		return a.minor, nil
	}
	v, err := a.client.Discovery().ServerVersion()
	if err != nil {
		return 0, fmt.Errorf("reading the API server's version: %w", err)
	}
	minor, err := strconv.Atoi(strings.TrimRight(v.Minor, "+"))
	if err != nil || v.Major != "1" {
		return 0, fmt.Errorf("the API server reports version %q (major %q, minor %q), not 1.N: cannot tell whether its kubelets still have the in-tree plugin", v.GitVersion, v.Major, v.Minor)
	}
	a.minor = minor
	return minor, nil
}

// dropServedModes removes from the in-tree form of a rewritten PV the
// overrides annotation that records only its access modes, as
// rewrite.KeepServedModes kept them: the in-tree PV had those modes itself, so the
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
	if !rewrite.ServedAsTheyAre(in) {
		return // not what rewrite.KeepServedModes keeps
	}
	delete(in.Annotations, plugin.AnnCSIOverrides)
}

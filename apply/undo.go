package apply

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
)

// checkUndo runs every check on a CSI PV csimigrate created before the
// undo's first write to it, and builds the in-tree PV that replaces it.
func (a *Writer) checkUndo(ctx context.Context, cur *v1.PersistentVolume) (*checkedPV, error) {
	pvc, err := a.claimChecks(ctx, cur)
	if err != nil {
		return nil, err
	}
	in, err := rewrite.UndoReplacement(a.tr, cur)
	if err != nil {
		return nil, asRefusal(err)
	}
	if err := a.inTreeServed(plugin.InTreeNameOfPV(in)); err != nil {
		return nil, err
	}
	// The in-tree PV must be the same volume to the kubelet, the
	// attach/detach controller and the driver: they translate it.
	driver, handle, err := a.Identity(in)
	if err != nil {
		return nil, refuse(rewrite.CodeNotTranslatable, "its in-tree form does not translate: %v", err)
	}
	// An adopted PV's in-tree form is known by the migration handle it had
	// before the adoption: the handle changes, so it is undone only while
	// no pod uses it, and only with the Ceph access that removes its
	// journal entry.
	want := cur.Spec.CSI.VolumeHandle
	j, err := journalOf(cur)
	if err != nil {
		return nil, asRefusal(err)
	}
	// An adopted vSphere PV goes back to its datastore path; its disk
	// stays registered (the driver's syncer registers every migrated disk).
	_, vsphereAdopted, err := adopt.VSphereDiskOf(cur)
	if err != nil {
		return nil, asRefusal(err)
	}
	if vsphereAdopted {
		want = cur.Annotations[adopt.AnnAdoptedFrom]
	}
	if j != nil {
		want = cur.Annotations[adopt.AnnAdoptedFrom]
		if a.o.Ceph == nil {
			return nil, &rewrite.Refusal{Code: rewrite.CodeNotRecorded, Reason: "its image was adopted into Ceph CSI's journal, and the undo removes that entry: it needs Ceph access",
				Remedy: "give the undo access to Ceph (a ceph.conf, a user and its keyring)", Action: plugin.ActionGiveCephAccess}
		}
	}
	if driver != cur.Spec.CSI.Driver || handle != want {
		return nil, refuse(rewrite.CodeHandleChanges, "its in-tree form translates to %s %q, not to this PV's %s %q: Kubernetes would know the volume by another name", driver, handle, cur.Spec.CSI.Driver, want)
	}
	pods, err := a.inUseRefusal(ctx, cur, in, driver, handle)
	inUse := len(pods) > 0
	if err != nil {
		return nil, err
	}
	if inUse && (j != nil || vsphereAdopted) {
		return nil, refuse(rewrite.CodeInUse, "its volume was adopted: the undo changes the volume handle the kubelet tracks; stop the pods that use it first")
	}
	if j != nil {
		if _, err := a.journalState(ctx, *j); err != nil {
			return nil, asRefusal(err)
		}
	}
	return &checkedPV{uid: cur.UID, pvc: pvc, repl: in}, nil
}

// buildUndo is the in-tree replacement of a CSI PV csimigrate created.
func (a *Writer) buildUndo(cur *v1.PersistentVolume, _ *checkedPV) (*v1.PersistentVolume, string, error) {
	in, err := rewrite.UndoReplacement(a.tr, cur)
	return in, "", err
}

// asRefusal makes err a refusal unless it is one.
func asRefusal(err error) error {
	if ref := (*rewrite.Refusal)(nil); errors.As(err, &ref) {
		return err
	}
	return refuse(rewrite.CodeNotTranslatable, "%v", err)
}

// removedInTree maps the in-tree plugins Kubernetes removed without a
// migration that still serves their PVs to the minor release that removed
// them: the RBD and CephFS plugins went in 1.31 (CephFS was never migrated,
// and RBD's migration went with its plugin). vSphere's in-tree PVs are still
// served through CSI migration (a 1.37 kubelet mounts them: the online
// kubelet test).
var removedInTree = map[string]int{plugin.RBDInTreePluginName: 31, plugin.CephFSInTreePluginName: 31}

// inTreeServed refuses an undo to an in-tree plugin that the cluster's
// Kubernetes (its API server's version) no longer has.
func (a *Writer) inTreeServed(plugin string) error {
	removed, ok := removedInTree[plugin]
	if !ok {
		return nil
	}
	minor, err := a.serverMinor()
	if err != nil {
		return err
	}
	if minor >= removed {
		return &rewrite.Refusal{Code: rewrite.CodePluginRemoved, Reason: fmt.Sprintf("the API server is Kubernetes 1.%d, and 1.%d removed the in-tree plugin %s: no kubelet would mount the in-tree PV", minor, removed, plugin),
			Remedy: "keep the CSI PV and fix the driver's setup: the Ceph CSI cluster entry and the Secrets the PV names"}
	}
	return nil
}

// serverMinor is the API server's minor version, read once per run.
func (a *Writer) serverMinor() (int, error) {
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

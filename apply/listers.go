package apply

import (
	"context"
	"strings"

	"github.com/csimigrate/csimigrate/plugin"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
)

// Listers let a Writer read from informers' caches instead of the API
// server: a controller that watches these objects anyway hands them over,
// and its rechecks then cost no reads. Any of them may be nil (that read
// goes to the API server). A cache that lags costs nothing but a retry:
// every write carries the uid and resourceVersion it was read with, a
// write that fails on them is followed by a fresh read from the API
// server, and the claim is read from the API server again right before a
// replacement is created.
type Listers struct {
	// PVs answer a Run's first look at its PV. A PV no direction acts on
	// may be held as SlimPV gives it.
	PVs corelisters.PersistentVolumeLister
	// Claims answer the checks' read of a PV's claim. A claim it does not
	// find is read from the API server, so a cache may leave out the
	// claims it does not expect to be checked.
	Claims corelisters.PersistentVolumeClaimLister
	// Pods answer which pods use a claim (the in-use check). The Writer
	// reads their namespace, name, nodeName, volumes and phase only, so an
	// informer may trim the rest.
	Pods corelisters.PodLister
	// PodsUsing, when set, answers the in-use check instead of Pods: the
	// pods of a namespace whose volumes name a claim (rewrite.PodClaims),
	// finished ones included. The Writer reads their name, nodeName and
	// phase only. A cache indexed by claim answers it without a list of
	// the namespace's pods; one that does not hold a claim's pods returns
	// an error matching ErrNotCached, and the Writer reads them from the
	// API server.
	PodsUsing func(namespace, claim string) ([]v1.Pod, error)
	// PVsNaming, when set, names the PVs that name a volume (by
	// rewrite.VolumeKey) for the adoption's check that no other PV names
	// the image, instead of a list of every PV from PVs: a cache that holds
	// the PVs no direction acts on as less than a PV object answers it, and
	// its PVs lister may then leave those out of List.
	PVsNaming func(key string) ([]string, error)
	// VolumeAttachments answer the online-safety check.
	VolumeAttachments storagelisters.VolumeAttachmentLister
	// States list the state ConfigMaps in the Writer's state namespace
	// (those labelled app.kubernetes.io/managed-by=csimigrate): a PV
	// without one needs no read of it before its first write.
	States corelisters.ConfigMapLister
}

// cachedPV is a Run's first look at its PV: the lister's copy when there
// is one (cached true), else the API server's answer.
func (a *Writer) cachedPV(ctx context.Context, name string) (pv *v1.PersistentVolume, cached bool, err error) {
	if a.listers.PVs != nil {
		if pv, err := a.listers.PVs.Get(name); err == nil {
			return pv.DeepCopy(), true, nil
		}
	}
	pv, err = getOrNil(a.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{}))
	return pv, false, err
}

// claim reads a claim, nil when there is none. A claim its lister does not
// hold is read from the API server: a cache may hold only the claims it
// expects to be checked (Listers.Claims).
func (a *Writer) claim(ctx context.Context, ns, name string) (*v1.PersistentVolumeClaim, error) {
	if a.listers.Claims != nil {
		pvc, err := a.listers.Claims.PersistentVolumeClaims(ns).Get(name)
		if err == nil {
			return pvc.DeepCopy(), nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return getOrNil(a.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{}))
}

// volumeAttachments lists the cluster's VolumeAttachments.
func (a *Writer) volumeAttachments(ctx context.Context) ([]storagev1.VolumeAttachment, error) {
	if a.listers.VolumeAttachments != nil {
		list, err := a.listers.VolumeAttachments.List(labels.Everything())
		if err != nil {
			return nil, err
		}
		// Shallow copies, which the online check only reads.
		out := make([]storagev1.VolumeAttachment, len(list))
		for i, va := range list {
			out[i] = *va
		}
		return out, nil
	}
	list, err := a.client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// SlimPV is what a cache needs to keep of a PV that no direction of a
// Writer acts on or resumes a run on: its name, uid, resourceVersion,
// labels (selectors), deletion, claim, class, phase and the volume it names
// (rewrite.VolumeKey gives the same key for it). A PV a direction may act
// on is returned as it is: one of an in-tree plugin, one that carries an
// annotation of csimigrate's (a rewrite, an adoption, a run under way), and
// a CSI PV of Ceph CSI that the adoption of CSI PVs takes (a migration
// handle, a static CephFS volume). A controller's PV informer holds most
// PVs of a large cluster this way (CSI PVs its drivers provisioned); its
// Runs read the PVs they act on whole, and every write is made from the API
// server's copy.
func SlimPV(pv *v1.PersistentVolume) *v1.PersistentVolume {
	if KeptWhole(pv) {
		return pv
	}
	csi := pv.Spec.CSI
	out := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pv.Name, UID: pv.UID, ResourceVersion: pv.ResourceVersion, Labels: pv.Labels,
			DeletionTimestamp: pv.DeletionTimestamp},
		Spec: v1.PersistentVolumeSpec{StorageClassName: pv.Spec.StorageClassName,
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: csi.Driver, VolumeHandle: csi.VolumeHandle}}},
		Status: v1.PersistentVolumeStatus{Phase: pv.Status.Phase},
	}
	if c := pv.Spec.ClaimRef; c != nil {
		out.Spec.ClaimRef = &v1.ObjectReference{Kind: c.Kind, Namespace: c.Namespace, Name: c.Name, UID: c.UID}
	}
	for _, k := range volumeKeyAttributes {
		if v, ok := csi.VolumeAttributes[k]; ok {
			if out.Spec.CSI.VolumeAttributes == nil {
				out.Spec.CSI.VolumeAttributes = make(map[string]string, len(volumeKeyAttributes))
			}
			out.Spec.CSI.VolumeAttributes[k] = v
		}
	}
	return out
}

// KeptWhole reports whether a cache must keep a PV whole: a direction of a
// Writer may act on it or resume a run on it (SlimPV returns it as it is).
// A nil PV and a PV that is not CSI are kept whole.
func KeptWhole(pv *v1.PersistentVolume) bool {
	if pv == nil || pv.Spec.CSI == nil || plugin.InTreeNameOfPV(pv) != "" {
		return true
	}
	for k := range pv.Annotations {
		if strings.Contains(k, "csimigrate.io/") {
			return true
		}
	}
	k, _ := adoptionKindOf(pv)
	return k != kindOther
}

// volumeKeyAttributes are the CSI volume attributes rewrite.VolumeKey reads.
var volumeKeyAttributes = []string{"clusterID", "pool", "imageName", "rootPath", "subvolumePath"}

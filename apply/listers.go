package apply

import (
	"context"

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
	// PVs answer a Run's first look at its PV.
	PVs corelisters.PersistentVolumeLister
	// Claims answer the checks' read of a PV's claim.
	Claims corelisters.PersistentVolumeClaimLister
	// Pods answer which pods use a claim (the in-use check). The Writer
	// reads their namespace, name, nodeName, volumes and phase only, so an
	// informer may trim the rest.
	Pods corelisters.PodLister
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

// claim reads a claim, nil when there is none.
func (a *Writer) claim(ctx context.Context, ns, name string) (*v1.PersistentVolumeClaim, error) {
	if a.listers.Claims != nil {
		pvc, err := a.listers.Claims.PersistentVolumeClaims(ns).Get(name)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return pvc.DeepCopy(), nil
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

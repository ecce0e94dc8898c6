// Package peertest checks the handle contract against a stock translator
// (k8s.io/csi-translation-lib, whichever release the calling test module
// pins): for every in-tree PV a cluster may store, whichever library a
// component runs, the forward translation names the same driver and handle,
// so the VolumeAttachment name kube-controller-manager and the attacher
// compute, and the volume name the kubelet tracks, are the same.
//
// The stored in-tree PVs are the reverse translations, by csimigrate and by
// the stock translator, of CSI PVs of two origins: migrated (an in-tree PV
// translated forward by either library) and provisioned (what a CSI driver
// returns to external-provisioner for a migrated in-tree StorageClass).
package peertest

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/plugin"
)

// Stock is a stock translator's plugin, with the signatures of the release
// under test wrapped away. Its functions may modify their arguments and
// panic (both are recovered from here); they get copies.
type Stock struct {
	Forward func(pv *v1.PersistentVolume) (*v1.PersistentVolume, error)
	Reverse func(pv *v1.PersistentVolume) (*v1.PersistentVolume, error)
	Inline  func(vol *v1.Volume, podNamespace string) (*v1.PersistentVolume, error)
}

// Case configures one plugin's check.
type Case struct {
	// Ours returns csimigrate's plugin for a CSI PV that came from the
	// in-tree PV inTree (nil for a provisioned one), configured as a
	// cluster running it would be (for Ceph, with the cluster config that
	// holds the monitors).
	Ours func(inTree *v1.PersistentVolume) plugin.InTreePlugin
	// Stock is the stock translator of the same in-tree plugin.
	Stock Stock
	// InTree generates valid in-tree PVs; Provisioned generates CSI PVs the
	// driver provisioned for a migrated StorageClass.
	InTree, Provisioned func(*rapid.T) *v1.PersistentVolume
	// Inline generates pods' inline volumes.
	Inline func(*rapid.T) *v1.Volume
	// StockRejects reports an in-tree PV from the stock reverse translation
	// that the API server rejects (such a PV is never stored), with why.
	StockRejects func(pv *v1.PersistentVolume) (string, bool)
	// Deliberate, when set, maps a stock handle to csimigrate's where
	// csimigrate deliberately differs because the stock handle cannot work
	// (a vSphere path without ".vmdk", which the driver does not recognise
	// as migrated, so no attachment with the stock handle can exist).
	Deliberate func(stockHandle string) string
}

// VSphereDeliberate is the vSphere Case's Deliberate: the volume path as
// in-tree resolved it.
func VSphereDeliberate(stockHandle string) string {
	if stockHandle == "" || strings.HasSuffix(stockHandle, ".vmdk") {
		return stockHandle
	}
	return stockHandle + ".vmdk"
}

// VSphereStockRejects reports a vSphere in-tree PV from a stock reverse
// translation that the API server rejects: an empty volumePath
// (csi-translation-lib takes it from initialvolumefilepath only).
func VSphereStockRejects(pv *v1.PersistentVolume) (string, bool) {
	if pv.Spec.VsphereVolume == nil || pv.Spec.VsphereVolume.VolumePath == "" {
		return "spec.vsphereVolume.volumePath is empty", true
	}
	return "", false
}

// RBDStockRejects reports an RBD in-tree PV from a stock reverse translation
// that the API server rejects: an empty image (no imageName attribute).
func RBDStockRejects(pv *v1.PersistentVolume) (string, bool) {
	if pv.Spec.RBD == nil || pv.Spec.RBD.RBDImage == "" {
		return "spec.rbd.image is empty", true
	}
	return "", false
}

// AttachmentName is the name kube-controller-manager's CSI attacher gives
// the VolumeAttachment of a volume on a node (getAttachmentName in
// k8s.io/kubernetes/pkg/volume/csi, unexported there): "csi-" and the hex
// SHA-256 of handle, driver and node name.
func AttachmentName(handle, driver, node string) string {
	return featuregate.AttachmentName(handle, driver, node)
}

// KubeletVolumeName is the unique volume name the kubelet's volume manager
// tracks for a CSI volume: the CSI plugin's name, "/", and the volume name
// the CSI plugin returns, "<driver>^<handle>" (GetUniqueVolumeName in
// k8s.io/kubernetes/pkg/volume/util and csiPlugin.GetVolumeName).
func KubeletVolumeName(driver, handle string) string {
	return "kubernetes.io/csi/" + driver + "^" + handle
}

var logger = klog.Background().V(100)

// stock calls f, turning a panic into an error.
func stock[T any](f func() (T, error)) (out T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f()
}

// sameNames fails unless a and b name the same driver and handle, and so
// the same VolumeAttachment and kubelet volume.
func sameNames(t *rapid.T, c Case, what string, ours, theirs *v1.PersistentVolume) {
	t.Helper()
	o, s := ours.Spec.CSI, theirs.Spec.CSI
	if o == nil || s == nil {
		t.Fatalf("%s: no CSI source (csimigrate %v, stock %v)", what, o, s)
	}
	if c.Deliberate != nil {
		cp := *s
		cp.VolumeHandle = c.Deliberate(s.VolumeHandle)
		s = &cp
	}
	if o.Driver != s.Driver || o.VolumeHandle != s.VolumeHandle {
		t.Fatalf("%s: csimigrate gives %s %q, the stock translator %s %q", what, o.Driver, o.VolumeHandle, s.Driver, s.VolumeHandle)
	}
	node := gen.DNSSubdomain().Draw(t, "node")
	if a, b := AttachmentName(o.VolumeHandle, o.Driver, node), AttachmentName(s.VolumeHandle, s.Driver, node); a != b {
		t.Fatalf("%s: VolumeAttachment %s, stock %s", what, a, b)
	}
	if a, b := KubeletVolumeName(o.Driver, o.VolumeHandle), KubeletVolumeName(s.Driver, s.VolumeHandle); a != b {
		t.Fatalf("%s: kubelet volume %s, stock %s", what, a, b)
	}
}

// Counts says how many examples reached each check, so that a test can
// fail when a generator stops reaching one.
type Counts struct {
	// OurReverse counts stored PVs from csimigrate's reverse translation,
	// StockReverse those from the stock one, StockRejected the stock
	// reverse translations the API server would reject.
	OurReverse, StockReverse, StockRejected int
}

// Handles checks, over generated CSI PVs of both origins, that the in-tree
// PV csimigrate's reverse translation stores is translated forward to the
// same driver and handle by both libraries, and that so is the in-tree PV
// the stock reverse translation stores (unless the API server would reject
// it).
func Handles(t *testing.T, c Case) Counts {
	t.Helper()
	var n Counts
	rapid.Check(t, func(t *rapid.T) {
		var csiPV, inTree *v1.PersistentVolume
		origin := rapid.SampledFrom([]string{"migrated by csimigrate", "migrated by the stock translator", "provisioned"}).Draw(t, "origin")
		switch origin {
		case "provisioned":
			csiPV = c.Provisioned(t)
		default:
			inTree = c.InTree(t)
			var err error
			if origin == "migrated by csimigrate" {
				csiPV, err = c.Ours(inTree).TranslateInTreePVToCSI(logger, inTree)
			} else {
				csiPV, err = stock(func() (*v1.PersistentVolume, error) { return c.Stock.Forward(inTree.DeepCopy()) })
			}
			if err != nil {
				t.Fatalf("%s: forward of a valid in-tree PV: %v", origin, err)
			}
		}
		ours := c.Ours(inTree)

		stored, err := ours.TranslateCSIPVToInTree(csiPV)
		if err != nil {
			t.Fatalf("%s: csimigrate's reverse: %v", origin, err)
		}
		n.OurReverse++
		a, err := ours.TranslateInTreePVToCSI(logger, stored)
		if err != nil {
			t.Fatalf("%s: csimigrate's forward of its own reverse: %v", origin, err)
		}
		b, err := stock(func() (*v1.PersistentVolume, error) { return c.Stock.Forward(stored.DeepCopy()) })
		if err != nil {
			t.Fatalf("%s: stock forward of csimigrate's reverse: %v", origin, err)
		}
		sameNames(t, c, origin+", stored by csimigrate", a, b)

		stockStored, err := stock(func() (*v1.PersistentVolume, error) { return c.Stock.Reverse(csiPV.DeepCopy()) })
		if err != nil {
			t.Fatalf("%s: stock reverse: %v", origin, err)
		}
		if why, rejected := c.StockRejects(stockStored); rejected {
			t.Logf("%s: the stock reverse translation is not a valid PV (%s); it cannot be stored", origin, why)
			n.StockRejected++
			return
		}
		n.StockReverse++
		a, err = ours.TranslateInTreePVToCSI(logger, stockStored)
		if err != nil {
			t.Fatalf("%s: csimigrate's forward of the stock reverse: %v", origin, err)
		}
		b, err = stock(func() (*v1.PersistentVolume, error) { return c.Stock.Forward(stockStored.DeepCopy()) })
		if err != nil {
			t.Fatalf("%s: stock forward of its own reverse: %v", origin, err)
		}
		sameNames(t, c, origin+", stored by the stock translator", a, b)
	})
	return n
}

// Inline checks that both libraries translate generated inline volumes to
// the same driver and handle. A stock translation that panics or fails is
// reported by the returned count and skipped (csi-translation-lib
// dereferences a nil PV for a vSphere inline volume with a storage policy).
func Inline(t *testing.T, c Case) (stockFailed int) {
	t.Helper()
	rapid.Check(t, func(t *rapid.T) {
		vol := c.Inline(t)
		ns := gen.DNSLabel().Draw(t, "podNamespace")
		a, err := c.Ours(nil).TranslateInTreeInlineVolumeToCSI(logger, vol, ns)
		if err != nil {
			t.Fatalf("csimigrate: %v", err)
		}
		b, err := stock(func() (*v1.PersistentVolume, error) { return c.Stock.Inline(vol.DeepCopy(), ns) })
		if err != nil {
			t.Logf("the stock translator fails: %v", err)
			stockFailed++
			return
		}
		sameNames(t, c, "inline", a, b)
	})
	return stockFailed
}

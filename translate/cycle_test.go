package translate_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storage "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/translate"
)

// provision plays external-provisioner: it resolves the references of the
// (translated) StorageClass, strips the reserved keys, and builds the CSI PV
// from what the driver returned.
func provision(t *testing.T, sc *storage.StorageClass, pvc *v1.PersistentVolumeClaim, handle string, volumeContext map[string]string) *v1.PersistentVolume {
	t.Helper()
	pvName := "pvc-7e57"
	refs, err := secrets.ResolveAll(sc.Parameters, secrets.Claim{PVName: pvName, PVC: pvc})
	if err != nil {
		t.Fatal(err)
	}
	params, err := secrets.StripReserved(sc.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	attrs := map[string]string{}
	for k, v := range params {
		attrs[k] = v
	}
	for k, v := range volumeContext {
		attrs[k] = v
	}
	src := &v1.CSIPersistentVolumeSource{Driver: sc.Provisioner, VolumeHandle: handle, FSType: sc.Parameters["csi.storage.k8s.io/fstype"], VolumeAttributes: attrs}
	refs.ApplyTo(src)
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": sc.Provisioner}},
		Spec: v1.PersistentVolumeSpec{
			AccessModes:                   pvc.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &v1.ObjectReference{Namespace: pvc.Namespace, Name: pvc.Name},
			StorageClassName:              sc.Name,
			PersistentVolumeSource:        v1.PersistentVolumeSource{CSI: src},
		},
	}
}

func refsOf(pv *v1.PersistentVolume) []*v1.SecretReference {
	c := pv.Spec.CSI
	return []*v1.SecretReference{c.ControllerPublishSecretRef, c.NodeStageSecretRef, c.NodePublishSecretRef, c.ControllerExpandSecretRef, c.NodeExpandSecretRef}
}

// in-tree SC -> CSI SC -> resolved refs -> CSI PV -> in-tree PV (as the
// provisioner stores it) -> CSI PV: the references survive, node-expand
// included, for every built-in plugin.
func TestSecretReferencesSurviveProvisioning(t *testing.T) {
	cfg := ceph.NewClusterConfig(ceph.ClusterEntry{ClusterID: "c1", Monitors: []string{"10.0.0.1:6789"}})
	tr, err := translate.New(translate.WithCephClusterConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "shop", Annotations: map[string]string{"team": "pay"}},
		Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}}}

	rbdSC := &storage.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "rbd"}, Provisioner: "kubernetes.io/rbd", Parameters: map[string]string{
		"monitors": "10.0.0.1:6789,10.0.0.2:6789", "adminSecretName": "ceph-admin", "adminSecretNamespace": "ceph", "pool": "kube"}}
	csiRBD, err := tr.TranslateInTreeStorageClassToCSI(logger, "kubernetes.io/rbd", rbdSC)
	if err != nil {
		t.Fatal(err)
	}
	// An admin's variant of the translated class: per-claim node-expand keys.
	custom := csiRBD.DeepCopy()
	custom.Parameters["csi.storage.k8s.io/node-expand-secret-name"] = "expand-${pvc.annotations['team']}"
	custom.Parameters["csi.storage.k8s.io/node-expand-secret-namespace"] = "${pvc.namespace}"

	vsSC := &storage.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "vs"}, Provisioner: "kubernetes.io/vsphere-volume", Parameters: map[string]string{"storagepolicyname": "gold"}}
	csiVS, err := tr.TranslateInTreeStorageClassToCSI(logger, "kubernetes.io/vsphere-volume", vsSC)
	if err != nil {
		t.Fatal(err)
	}
	csiVS.Parameters["csi.storage.k8s.io/secret-name"] = "vsphere-creds"
	csiVS.Parameters["csi.storage.k8s.io/secret-namespace"] = "${pvc.namespace}"

	// CephFS had no in-tree provisioner: a Ceph CSI class from the start.
	cephfsSC := &storage.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "cephfs"}, Provisioner: "cephfs.csi.ceph.com", Parameters: map[string]string{
		"clusterID": "c1", "fsName": "myfs",
		"csi.storage.k8s.io/provisioner-secret-name": "cephfs-prov", "csi.storage.k8s.io/provisioner-secret-namespace": "ceph",
		"csi.storage.k8s.io/node-stage-secret-name": "cephfs-node", "csi.storage.k8s.io/node-stage-secret-namespace": "ceph",
		"csi.storage.k8s.io/node-expand-secret-name": "cephfs-expand", "csi.storage.k8s.io/node-expand-secret-namespace": "ceph"}}

	for _, tc := range []struct {
		name   string
		sc     *storage.StorageClass
		handle string
		ctx    map[string]string
		// stock is the handle csi-translation-lib computes for the stored
		// in-tree PV, when it is not the provisioned one.
		stock string
	}{
		{"rbd", csiRBD, "0001-0020-c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1-0000000000000002-c867ff35-3f04-11ec-b823-0242ac110003",
			map[string]string{"imageName": "csi-vol-c867ff35-3f04-11ec-b823-0242ac110003", "journalPool": "kube"}, ""},
		{"rbd custom node-expand", custom, "0001-0020-c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1-0000000000000002-c867ff35-3f04-11ec-b823-0242ac110004",
			map[string]string{"imageName": "csi-vol-c867ff35-3f04-11ec-b823-0242ac110004"}, ""},
		{"vsphere", csiVS, "9d5d0d4c-1111-2222-3333-444455556666",
			map[string]string{"initialvolumefilepath": "[vsanDatastore] fcd/9d5d0d4c.vmdk", "type": "vSphere CNS Block Volume"},
			"[vsanDatastore] fcd/9d5d0d4c.vmdk"},
		{"cephfs", cephfsSC, "0001-0002-c1-0000000000000001-5f9b2d1e-3f04-11ec-b823-0242ac110003",
			map[string]string{"subvolumeName": "csi-vol-5f9b2d1e", "subvolumePath": "/volumes/csi/csi-vol-5f9b2d1e/abc"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			csiPV := provision(t, tc.sc, pvc, tc.handle, tc.ctx)
			if csiPV.Spec.CSI.NodeExpandSecretRef == nil {
				t.Fatal("the provisioned PV has no node-expand reference")
			}
			stored, err := tr.TranslateCSIPVToInTree(csiPV)
			if err != nil {
				t.Fatal(err)
			}
			if stored.Spec.CSI != nil {
				t.Fatal("reverse left a CSI source")
			}
			again, err := tr.TranslateInTreePVToCSI(logger, stored)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(refsOf(csiPV), refsOf(again)); diff != "" {
				t.Errorf("references after the provisioner's round trip (-provisioned +kubelet's view):\n%s", diff)
			}
			want := csiPV.Spec.CSI.DeepCopy()
			if tc.stock != "" {
				// Stock components compute the volume path from the stored
				// PV; the provisioned handle is kept beside it.
				want.VolumeHandle = tc.stock
				if got := again.Annotations[plugin.AnnOriginalVolumeHandle]; got != tc.handle {
					t.Errorf("annotation %s = %q, want the provisioned handle %q", plugin.AnnOriginalVolumeHandle, got, tc.handle)
				}
			}
			if diff := cmp.Diff(want, again.Spec.CSI); diff != "" {
				t.Errorf("CSI source (-provisioned +round trip):\n%s", diff)
			}
			storedAgain, err := tr.TranslateCSIPVToInTree(again)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(stored, storedAgain); diff != "" {
				t.Errorf("the stored PV changes when translated forward and back (-first +second):\n%s", diff)
			}
		})
	}
}

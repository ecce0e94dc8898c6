package cephtest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/volumeid"
)

// inTreeRBDClass is an in-tree RBD StorageClass as admins wrote them.
func inTreeRBDClass(name, pool, secret string) *storagev1.StorageClass {
	del := v1.PersistentVolumeReclaimDelete
	return &storagev1.StorageClass{
		TypeMeta:    metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"},
		ObjectMeta:  metav1.ObjectMeta{Name: name},
		Provisioner: "kubernetes.io/rbd",
		Parameters: map[string]string{
			"monitors": MonitorV1, "pool": pool, "adminId": "admin", "adminSecretName": secret, "adminSecretNamespace": "default",
			"userId": "admin", "userSecretName": secret, "userSecretNamespace": "default", "imageFormat": "2", "imageFeatures": "layering",
			"fsType": "ext4",
		},
		ReclaimPolicy: &del,
	}
}

// TestCephStorageClassProvisions: the CSI StorageClass translated from an
// in-tree RBD class provisions through Ceph CSI: CreateVolume with its
// parameters (reserved keys stripped, as external-provisioner does) and its
// provisioner secret creates the image in the class's pool with the
// class's features; the volume ID Ceph CSI returns survives our reverse and
// forward translation byte for byte; DeleteVolume on it deletes the image.
func TestCephStorageClassProvisions(t *testing.T) {
	c, d := cephEnv(t)
	ctx := callCtx(t)
	const pool = "sc.pool-2"
	createPool(t, c, pool)
	sc := inTreeRBDClass("fast", pool, "ceph-admin")
	adminSecret := map[string]string{"key": c.AdminKey} // the in-tree admin secret's data
	tr, logger := configure(t, d, sc)
	csiSC, err := tr.TranslateInTreeStorageClassToCSI(logger, "kubernetes.io/rbd", sc)
	if err != nil {
		t.Fatal(err)
	}
	if csiSC.Provisioner != "rbd.csi.ceph.com" {
		t.Fatalf("provisioner %q", csiSC.Provisioner)
	}
	pvName := "pvc-" + NewUUID()
	claim := secrets.Claim{PVName: pvName, PVC: &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "app"}}}
	refs, err := secrets.ResolveAll(csiSC.Parameters, claim)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*v1.SecretReference{refs.Provisioner, refs.ControllerExpand, refs.NodeStage} {
		if r == nil || r.Name != "ceph-admin" || r.Namespace != "default" {
			t.Fatalf("secret references %+v: want every one to be default/ceph-admin", refs)
		}
	}
	params, err := secrets.StripReserved(csiSC.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := d.RBD.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: pvName, Parameters: params, Secrets: adminSecret,
		CapacityRange:      &csi.CapacityRange{RequiredBytes: imageSize},
		VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4")}})
	if err != nil {
		t.Fatalf("CreateVolume with parameters %v: %v", params, err)
	}
	vol := resp.GetVolume()
	id, err := volumeid.ParseCephCSIVolumeID(vol.GetVolumeId())
	if err != nil {
		t.Fatalf("the volume ID Ceph CSI returned: %v", err)
	}
	image := vol.GetVolumeContext()["imageName"]
	if vol.GetVolumeContext()["pool"] != pool || image == "" {
		t.Fatalf("volume context %v: want pool %q and an image name", vol.GetVolumeContext(), pool)
	}
	out, err := c.RBD(ctx, "info", "--format", "json", pool+"/"+image)
	if err != nil {
		t.Fatalf("Ceph has no image %s/%s: %v", pool, image, err)
	}
	var info struct {
		Size     int64    `json:"size"`
		Features []string `json:"features"`
		Format   int      `json:"format"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(info.Features, []string{"layering"}) || info.Format != 2 || info.Size != imageSize {
		t.Errorf("rbd info %s/%s: features %v, format %d, size %d; want [layering], 2, %d", pool, image, info.Features, info.Format, info.Size, imageSize)
	}
	if want := poolID(t, c, pool); id.Location != want {
		t.Errorf("volume ID location %d, Ceph's id of pool %q %d", id.Location, pool, want)
	}
	if id.ClusterID != csiSC.Parameters["clusterID"] {
		t.Errorf("volume ID clusterID %q, StorageClass clusterID %q", id.ClusterID, csiSC.Parameters["clusterID"])
	}

	// The PV external-provisioner would store, through our translation
	// to in-tree and back.
	attrs := map[string]string{"storage.kubernetes.io/csiProvisionerIdentity": "1700000000000-8081-rbd.csi.ceph.com"}
	for k, v := range vol.GetVolumeContext() {
		attrs[k] = v
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "rbd.csi.ceph.com"}},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: *resource.NewQuantity(vol.GetCapacityBytes(), resource.BinarySI)},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
			StorageClassName:              sc.Name,
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
				Driver: "rbd.csi.ceph.com", VolumeHandle: vol.GetVolumeId(), FSType: "ext4", VolumeAttributes: attrs,
				ControllerExpandSecretRef: refs.ControllerExpand, NodeStageSecretRef: refs.NodeStage,
			}},
		},
	}
	inTree, err := tr.TranslateCSIPVToInTree(pv)
	if err != nil {
		t.Fatalf("CSI -> in-tree: %v", err)
	}
	if inTree.Spec.RBD == nil || inTree.Spec.RBD.RBDPool != pool || inTree.Spec.RBD.RBDImage != image ||
		strings.Join(inTree.Spec.RBD.CephMonitors, ",") != MonitorV1 {
		t.Errorf("in-tree source %+v: want pool %q, image %q, monitors %s", inTree.Spec.RBD, pool, image, MonitorV1)
	}
	back, err := tr.TranslateInTreePVToCSI(logger, inTree)
	if err != nil {
		t.Fatalf("in-tree -> CSI: %v", err)
	}
	if back.Spec.CSI.VolumeHandle != vol.GetVolumeId() {
		t.Errorf("volume handle after the round trip %q, Ceph CSI's %q", back.Spec.CSI.VolumeHandle, vol.GetVolumeId())
	}

	if _, err := d.RBD.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: back.Spec.CSI.VolumeHandle, Secrets: adminSecret}); err != nil {
		t.Fatalf("DeleteVolume of the round-tripped handle: %v", err)
	}
	if _, ok := images(t, c, pool)[image]; ok {
		t.Errorf("%s/%s is still listed after DeleteVolume", pool, image)
	}
}

// poolID is Ceph's id of a pool.
func poolID(t testing.TB, c *Cluster, pool string) int64 {
	t.Helper()
	out, err := c.Ceph(callCtx(t), "osd", "pool", "ls", "detail", "-f", "json")
	if err != nil {
		t.Fatal(err)
	}
	var pools []struct {
		Name string `json:"pool_name"`
		ID   int64  `json:"pool_id"`
	}
	if err := json.Unmarshal([]byte(out), &pools); err != nil {
		t.Fatal(err)
	}
	for _, p := range pools {
		if p.Name == pool {
			return p.ID
		}
	}
	t.Fatalf("Ceph lists no pool %q", pool)
	return 0
}

// TestCephStorageClassAdminIdFromPlan: an in-tree RBD class as the
// Kubernetes website shows it (adminId kube, its admin secret holding only
// kube's key), for a cephx user limited to its pool. Ceph CSI reads the
// migration user only from the secret, so the translated class provisions
// as client.admin with that key and is refused; the plan says so (the class
// is not migratable) and lists the secret field to add; with exactly that
// field added, the same CreateVolume succeeds.
func TestCephStorageClassAdminIdFromPlan(t *testing.T) {
	c, d := cephEnv(t)
	ctx := callCtx(t)
	const pool, user = "kube.pool", "kube"
	key := poolUser(t, c, pool, user)
	sc := inTreeRBDClass("website", pool, "ceph-secret")
	sc.Parameters["adminId"], sc.Parameters["adminSecretNamespace"] = user, "kube-system"
	sc.Parameters["userId"], sc.Parameters["userSecretName"] = user, "ceph-secret-user"
	secret := &v1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, Type: "kubernetes.io/rbd",
		ObjectMeta: metav1.ObjectMeta{Name: "ceph-secret", Namespace: "kube-system"}, Data: map[string][]byte{"key": []byte(key)}}
	var plan struct {
		StorageClasses []struct {
			Name       string `json:"name"`
			Migratable bool   `json:"migratable"`
		} `json:"storageClasses"`
		Secrets []struct {
			Namespace, Name, Action string
			Fields                  []string
		} `json:"secrets"`
	}
	if err := json.Unmarshal(planJSON(t, sc, secret), &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.StorageClasses) != 1 || plan.StorageClasses[0].Migratable {
		t.Errorf("plan: classes %+v, want %s not migratable", plan.StorageClasses, sc.Name)
	}
	tr, logger := configure(t, d, sc, secret)
	csiSC, err := tr.TranslateInTreeStorageClassToCSI(logger, "kubernetes.io/rbd", sc)
	if err != nil {
		t.Fatal(err)
	}
	params, err := secrets.StripReserved(csiSC.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	create := func(sec *v1.Secret) (*csi.CreateVolumeResponse, error) {
		return d.RBD.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-" + NewUUID(), Parameters: params, Secrets: secrets.SecretStringData(sec),
			CapacityRange: &csi.CapacityRange{RequiredBytes: imageSize}, VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4")}})
	}
	if _, err := create(secret); err == nil {
		t.Fatal("CreateVolume with the admin secret as the in-tree class had it succeeded; the plan's finding would be wrong")
	} else {
		t.Logf("with the unfixed secret, as the plan says: %v", err)
	}
	// Exactly the fields the plan lists.
	fixed := secret.DeepCopy()
	n := 0
	for _, s := range plan.Secrets {
		if s.Namespace != secret.Namespace || s.Name != secret.Name {
			continue
		}
		if s.Action != "add" {
			t.Fatalf("plan: secret %s/%s: action %q, want add", s.Namespace, s.Name, s.Action)
		}
		for _, f := range s.Fields {
			k, v, _ := strings.Cut(f, "=")
			fixed.Data[k] = []byte(v)
			n++
		}
	}
	if n == 0 {
		t.Fatalf("the plan lists no field to add to %s/%s: %+v", secret.Namespace, secret.Name, plan.Secrets)
	}
	resp, err := create(fixed)
	if err != nil {
		t.Fatalf("CreateVolume with the secret fixed as the plan lists: %v", err)
	}
	image := resp.GetVolume().GetVolumeContext()["imageName"]
	if _, ok := images(t, c, pool)[image]; !ok {
		t.Fatalf("Ceph lists no image %s/%s", pool, image)
	}
	if _, err := d.RBD.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: resp.GetVolume().GetVolumeId(), Secrets: secrets.SecretStringData(fixed)}); err != nil {
		t.Fatalf("DeleteVolume: %v", err)
	}
}

package cephtest

import (
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/secrets"
)

// TestCephRBDMigrationSecret: an in-tree RBD volume of a non-admin cephx
// user whose caps are limited to its pool. Its in-tree secret holds only
// the user's key; translation cannot carry the user, so Ceph CSI, reading
// the secret as a migration secret, authenticates as admin with that key
// and is refused, which is what Ceph users reported after enabling
// migration. CheckPV warns; with the secret fixed as
// secrets.CephMigrationSecretFixes says, the same calls succeed.
func TestCephRBDMigrationSecret(t *testing.T) {
	c, d := cephEnv(t)
	ctx := callCtx(t)
	const pool, user = "tenant.pool", "tenant-a"
	key := poolUser(t, c, pool, user)
	image := "kubernetes-dynamic-pvc-" + NewUUID()
	if _, err := c.RBD(ctx, "create", "--size", "64M", pool+"/"+image); err != nil {
		t.Fatal(err)
	}
	pv := inTreeRBDPV("pv-tenant", rbdCase{Monitors: []string{MonitorV1}, Pool: pool, Image: image}, user, "ceph-tenant")
	inTree := &v1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "ceph-tenant", Namespace: "default"}, Type: "kubernetes.io/rbd",
		Data: map[string][]byte{"key": []byte(key)}}
	tr, logger := configure(t, d, pv)
	csiPV, err := tr.TranslateInTreePVToCSI(logger, pv)
	if err != nil {
		t.Fatal(err)
	}
	src := csiPV.Spec.CSI
	for name, ref := range map[string]*v1.SecretReference{"controllerExpandSecretRef": src.ControllerExpandSecretRef, "nodeStageSecretRef": src.NodeStageSecretRef} {
		if ref == nil || ref.Name != inTree.Name || ref.Namespace != inTree.Namespace {
			t.Fatalf("%s = %v, want the in-tree secret default/ceph-tenant", name, ref)
		}
	}
	warned := false
	for _, f := range tr.CheckPV(pv) {
		warned = warned || f.Code == rbd.FindingNonAdminUser
	}
	if !warned {
		t.Errorf("CheckPV does not report %s for RADOS user %q", rbd.FindingNonAdminUser, user)
	}
	expand := func(sec map[string]string) error {
		_, err := d.RBD.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: src.VolumeHandle,
			CapacityRange: &csi.CapacityRange{RequiredBytes: expandSize}, Secrets: sec, VolumeCapability: mountCap("ext4")})
		return err
	}

	// The in-tree secret as it is.
	err = expand(secrets.SecretStringData(inTree))
	if err == nil || !strings.Contains(err.Error(), "Permission denied") {
		t.Errorf("expand with the unfixed in-tree secret: %v (%v), want a permission error", codeOf(err), err)
	}
	if got := images(t, c, pool)[image]; got != imageSize {
		t.Errorf("image size %d after a refused expand, want %d", got, imageSize)
	}
	_, err = d.RBD.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: src.VolumeHandle, Secrets: secrets.SecretStringData(inTree)})
	if codeOf(err) != codes.Internal || !strings.Contains(err.Error(), "Permission denied") {
		t.Errorf("delete with the unfixed in-tree secret: %v (%v), want Internal with a permission error", codeOf(err), err)
	}
	if _, ok := images(t, c, pool)[image]; !ok {
		t.Fatalf("%s/%s is gone after a refused delete", pool, image)
	}

	// The secret as CephMigrationSecretFixes says to fix it.
	fixes, err := secrets.CephMigrationSecretFixes(inTree, user)
	if err != nil {
		t.Fatal(err)
	}
	if len(fixes) == 0 {
		t.Fatal("CephMigrationSecretFixes: no fix for a non-admin user's secret")
	}
	fixed := inTree.DeepCopy()
	for _, f := range fixes {
		if f.Namespace != inTree.Namespace || f.Name != inTree.Name {
			t.Fatalf("fix %v is for another secret", f)
		}
		fixed.Data[f.Field] = []byte(f.Value)
	}
	if again, err := secrets.CephMigrationSecretFixes(fixed, user); err != nil || len(again) != 0 {
		t.Errorf("the fixed secret still needs %v (%v)", again, err)
	}
	if err := expand(secrets.SecretStringData(fixed)); err != nil {
		t.Fatalf("expand with the fixed secret: %v", err)
	}
	if got := images(t, c, pool)[image]; got != expandSize {
		t.Errorf("image size %d after expand, want %d", got, expandSize)
	}
	if _, err := d.RBD.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: src.VolumeHandle, Secrets: secrets.SecretStringData(fixed)}); err != nil {
		t.Fatalf("delete with the fixed secret: %v", err)
	}
	if _, ok := images(t, c, pool)[image]; ok {
		t.Errorf("%s/%s is still listed after delete", pool, image)
	}
	if !trash(t, c, pool)[image] && !gone(t, c, pool, image) {
		t.Errorf("%s/%s is neither in the trash nor purged", pool, image)
	}
}

// poolUser creates pool and a cephx user whose caps are limited to it, and
// returns the user's key.
func poolUser(t testing.TB, c *Cluster, pool, user string) string {
	t.Helper()
	ctx := callCtx(t)
	createPool(t, c, pool)
	if _, err := c.Ceph(ctx, "auth", "get-or-create", "client."+user, "mon", "profile rbd", "osd", "profile rbd pool="+pool); err != nil {
		t.Fatal(err)
	}
	key, err := c.Ceph(ctx, "auth", "get-key", "client."+user)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(key)
}

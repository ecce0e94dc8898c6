package secrets_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/secrets"
)

// Ceph CSI reads an in-tree secret as a migration secret.
func ExampleCephCSICredentials() {
	c, err := secrets.CephCSICredentials(map[string]string{"key": "AQD...==", "adminId": "kube"})
	fmt.Println(c.ID, c.Key, c.Migration, err)
	// Output: kube [redacted] true <nil>
}

// What an in-tree RBD secret needs before migration.
func ExampleCephMigrationSecretFixes() {
	s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "ceph-user"}, Data: map[string][]byte{"key": []byte("AQD...==")}}
	fixes, _ := secrets.CephMigrationSecretFixes(s, "kube")
	for _, f := range fixes {
		fmt.Println(f)
	}
	// Output: secret shop/ceph-user: set adminId="kube": migrated volumes of RADOS user "kube" would otherwise connect as "admin"
}

// The CSI secret a migrated CephFS volume references.
func ExampleCephFSCSISecret() {
	in := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cephfs-assets"}, Data: map[string][]byte{"key": []byte("AQD...==")}}
	out, _ := secrets.CephFSCSISecret(in, "assets")
	fmt.Println(out.Namespace, out.Name, secrets.DataFromBytes(out.Data))
	// Output: shop cephfs-assets-csi-assets {"userID": [redacted], "userKey": [redacted]}
}

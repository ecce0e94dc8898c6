package controller_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/examples/controller"
)

// The example on Kubernetes' own API server: while another writer holds the
// Lease it writes nothing; then every seeded in-tree PV (RBD dynamic and
// static, CephFS, vSphere) ends as a CSI PV bound to its claim, and a second
// run finds nothing left to do.
func TestMigrateAll(t *testing.T) {
	s, err := testenv.Start(os.Stderr)
	if err != nil {
		t.Fatalf("cannot start kube-apiserver: %v", err)
	}
	t.Cleanup(s.Stop)
	c := s.Client
	ctx := context.Background()
	names := testenv.Seed(t, c, "ex")
	logger := klog.Background()

	// Another writer holds the Lease.
	_, other, err := apply.HoldLease(ctx, c, "kube-system", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := controller.MigrateAll(ctx, c, logger, "kube-system", 0); err == nil {
		t.Fatal("MigrateAll ran while another writer held the Lease")
	}
	for _, n := range names {
		if pv, err := c.CoreV1().PersistentVolumes().Get(ctx, n, metav1.GetOptions{}); err != nil || pv.Spec.CSI != nil {
			t.Fatalf("%s changed while another writer held the Lease: %v", n, err)
		}
	}
	other.Release(ctx)

	res, err := controller.MigrateAll(ctx, c, logger, "kube-system", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(res.Migrated)
	if !slices.Equal(res.Migrated, names) || len(res.Left) != 0 {
		t.Fatalf("migrated %v, left %v; want all of %v", res.Migrated, res.Left, names)
	}
	for k, st := range testenv.RewrittenStates(t, c, "ex", names) {
		if st.Pending || st.Claim != k {
			t.Errorf("%s: %+v", k, st)
		}
	}
	again, err := controller.MigrateAll(ctx, c, logger, "kube-system", 30*time.Second)
	if err != nil || len(again.Migrated) != 0 || len(again.Left) != 0 {
		t.Errorf("second run: %+v, %v", again, err)
	}
}

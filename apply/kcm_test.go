package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/apply/testenv"
)

// With kube-controller-manager's binder and protection controllers running,
// claims end Bound to the same PV after a rewrite and after every
// interrupted-and-resumed run. In the window between the delete of the
// in-tree PV and the create of its replacement, the binder marks a bound
// claim Lost (recorded here) and binds it again when the replacement, which
// names the claim's uid, appears.
func TestRewriteWithControllerManager(t *testing.T) {
	s, c := startWithControllerManager(t, testenv.V1_37)
	ctx := context.Background()

	names := testenv.Seed(t, c, "kcm")
	testenv.WaitBound(t, c, "kcm", names)
	if _, out, err := rewritePVs(t, c, Options{}, names); err != nil {
		t.Fatalf("rewrite: %v\n%s\n%s", err, out, s.Logs("kube-controller-manager"))
	}
	testenv.WaitBound(t, c, "kcm", names)
	for _, name := range names {
		if pv := getPV(t, c, name); pv.Spec.CSI == nil {
			t.Errorf("pv/%s is not a CSI PV", name)
		}
	}

	// Interrupted after each step, then resumed; the claim is watched in
	// the window.
	sawLost := false
	for k := 1; k <= 8; k++ {
		ns := fmt.Sprintf("kcm-cut%d", k)
		names := testenv.Seed(t, c, ns)
		testenv.WaitBound(t, c, ns, names)
		name := ns + "-rbd" // the dynamically provisioned RBD PV, claim "rbd"
		cut, _, err := rewritePVs(t, c, Options{MaxWrites: k}, []string{name})
		if err == nil && k > 4 {
			// Finished within k steps (the pv-protection controller may
			// remove its finalizer before the rewrite does).
			testenv.WaitBound(t, c, ns, []string{name})
			t.Logf("the rewrite took %d steps", cut.Writes())
			break
		} else if !errors.Is(err, ErrWriteLimit) {
			t.Fatalf("k=%d: the interrupted run returned %v", k, err)
		}
		if pv, err := c.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{}); err != nil || pv.DeletionTimestamp != nil {
			// The in-tree PV is deleted or going: what does the claim show
			// while it is gone?
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				_, pvErr := c.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
				pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "rbd", metav1.GetOptions{})
				if pvErr != nil && err == nil && pvc.Status.Phase == v1.ClaimLost {
					sawLost = true
					t.Logf("k=%d: with the in-tree PV gone, claim %s/rbd is %s", k, ns, pvc.Status.Phase)
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		if _, out, err := rewritePVs(t, c, Options{}, []string{name}); err != nil {
			t.Fatalf("k=%d: resume: %v\n%s", k, err, out)
		}
		testenv.WaitBound(t, c, ns, []string{name})
		if pv := getPV(t, c, name); pv.Spec.CSI == nil || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
			t.Errorf("k=%d: pv/%s ends %+v, policy %s", k, name, pv.Spec.PersistentVolumeSource, pv.Spec.PersistentVolumeReclaimPolicy)
		}
	}
	if !sawLost {
		t.Error("the claim was never seen Lost while its PV was gone; the window docs/rewrite-apply.md describes was not observed")
	}
	events, err := c.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=ClaimLost"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) > 0 {
		t.Logf("event %s: %s", events.Items[0].Reason, events.Items[0].Message)
	}
}

// On Kubernetes 1.30 (the last release with the in-tree RBD and CephFS
// plugins), with kube-controller-manager's binder and protection
// controllers: rewrite, undo, rewrite again. The undo gives back every PV as
// it was stored before the rewrite (spec, labels, annotations: the RBD PV
// kept at Retain by the rewrite gets its Delete back), claims end Bound,
// the StorageClass comes back with its parameters, a second undo changes
// nothing, the rewrite after the undo gives the same CSI PVs as the first;
// and an undo interrupted after each step resumes to the same end.
func TestUndoWithControllerManager(t *testing.T) {
	s, c := startWithControllerManager(t, testenv.V1_30)
	ctx := context.Background()

	names := testenv.Seed(t, c, "undo")
	testenv.WaitBound(t, c, "undo", names)
	original := testenv.StoredOf(t, c, names)
	class, err := c.StorageV1().StorageClasses().Get(ctx, "rbd-undo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(o Options, classes ...string) *Writer {
		t.Helper()
		w, out, err := rewritePVs(t, c, o, names, classes...)
		if err != nil {
			t.Fatalf("%+v: %v\n%s\n%s", o, err, out, s.Logs("kube-controller-manager"))
		}
		return w
	}
	run(Options{}, "rbd-undo")
	testenv.WaitBound(t, c, "undo", names)
	rewritten := testenv.StoredOf(t, c, names)
	if rewritten["undo-rbd-static"].Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain {
		t.Fatalf("the rewrite did not keep the static RBD PV at Retain: %+v", rewritten["undo-rbd-static"].Spec)
	}

	run(Options{Direction: Undo}, "rbd-undo")
	testenv.WaitBound(t, c, "undo", names)
	if diff := cmp.Diff(original, testenv.StoredOf(t, c, names)); diff != "" {
		t.Errorf("after rewrite and undo (-original +undone):\n%s", diff)
	}
	back, err := c.StorageV1().StorageClasses().Get(ctx, "rbd-undo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(classFields(class), classFields(back)); diff != "" {
		t.Errorf("StorageClass after rewrite and undo (-original +undone):\n%s", diff)
	}
	noStateLeft(t, c)
	if w := run(Options{Direction: Undo}, "rbd-undo"); w.Writes() != 0 {
		t.Errorf("a second undo took %d steps", w.Writes())
	}

	run(Options{})
	testenv.WaitBound(t, c, "undo", names)
	if diff := cmp.Diff(rewritten, testenv.StoredOf(t, c, names)); diff != "" {
		t.Errorf("the rewrite after the undo differs from the first (-first +again):\n%s", diff)
	}

	// An undo interrupted after each step, then resumed.
	for k := 1; k <= 8; k++ {
		ns := fmt.Sprintf("undo-cut%d", k)
		names := testenv.Seed(t, c, ns)
		testenv.WaitBound(t, c, ns, names)
		original := testenv.StoredOf(t, c, names)
		if _, out, err := rewritePVs(t, c, Options{}, names); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if _, _, err := rewritePVs(t, c, Options{Direction: Undo, MaxWrites: k}, names); !errors.Is(err, ErrWriteLimit) {
			t.Fatalf("k=%d: the interrupted undo returned %v", k, err)
		}
		// A rewrite is refused while the undo is in progress, where it
		// saved its state.
		if _, err := c.CoreV1().ConfigMaps("kube-system").Get(ctx, StateName(names[0]), metav1.GetOptions{}); err == nil {
			_, out, err := rewritePVs(t, c, Options{}, names[:1])
			if err == nil || !strings.Contains(err.Error(), "holds an undo of pv/"+names[0]+" in progress; finish it first") {
				t.Errorf("k=%d: a rewrite during the undo returned %v\n%s", k, err, out)
			}
		}
		if _, out, err := rewritePVs(t, c, Options{Direction: Undo}, names); err != nil {
			t.Fatalf("k=%d: resume: %v\n%s", k, err, out)
		}
		testenv.WaitBound(t, c, ns, names)
		if diff := cmp.Diff(original, testenv.StoredOf(t, c, names)); diff != "" {
			t.Errorf("k=%d: after an interrupted undo (-original +undone):\n%s", k, diff)
		}
	}
	noStateLeft(t, c)
}

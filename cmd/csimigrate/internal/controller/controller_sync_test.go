package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/csimigrate/csimigrate/rewrite"
)

// syncCase is one table case of a PV's syncs, as external-snapshotter's
// controller tests are written: the initial objects, the options, then
// syncPV called directly until it settles (done, or asks to look again
// later), and the PV, the Event reasons and the requeue expected.
type syncCase struct {
	name    string
	initial []runtime.Object
	opts    Options
	// wantCSI: the PV ends as a CSI PV (else it is left exactly as it was).
	wantCSI bool
	// wantEvents are the reasons of the Events recorded, in order, a run
	// of one reason once.
	wantEvents []string
	// wantRecheck: the last sync asks to look again after Options.Recheck.
	wantRecheck bool
}

// syncTest builds a controller on the fake clientset with the case's
// objects and options, starts its informers (no workers), holds the
// writer Lease, and returns it with its recorder.
func syncTest(t *testing.T, tc syncCase) (*Controller, *record.FakeRecorder, *fake.Clientset) {
	t.Helper()
	client := fake.NewSimpleClientset(tc.initial...)
	ctx, cancel := context.WithCancel(context.Background())
	o := tc.opts
	o.Recheck = time.Minute
	c, rec, _ := newForTest(t, ctx, client, o)
	stop, err := c.startInformers(ctx)
	t.Cleanup(func() { cancel(); stop() })
	if err != nil {
		t.Fatal(err)
	}
	return c, rec, client
}

// The dry run sends its writes with server-side dry run, which the fake
// clientset does not honour: it is tested against kube-apiserver
// (TestControllerDryRunAsActing in the command's package).
func TestSyncPV(t *testing.T) {
	keptPV := vspherePV("pv1")
	keptPV.Labels = map[string]string{"kustomize.toolkit.fluxcd.io/name": "storage", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
	changedPV := keptPV.DeepCopy()
	changedPV.Annotations = map[string]string{rewrite.AnnSourceChanged: "true"}
	claimGone := vspherePV("pv1")
	claimGone.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "ns", Name: "gone", UID: "uid-gone"}
	labelled := vspherePV("pv1")
	labelled.Labels = map[string]string{"team": "a"}
	for _, tc := range []syncCase{
		{name: "an in-tree PV is rewritten, its end an Event (not each write)", initial: []runtime.Object{vspherePV("pv1"), driver}, wantCSI: true,
			wantEvents: []string{ReasonMigrated}},
		{name: "no CSIDriver yet", initial: []runtime.Object{vspherePV("pv1")}, wantEvents: []string{ReasonWaitingForDriver}, wantRecheck: true},
		{name: "kept by a reconciler", initial: []runtime.Object{keptPV, driver}, wantEvents: []string{string(rewrite.CodeKeptByReconciler)}, wantRecheck: true},
		{name: "its source said changed", initial: []runtime.Object{changedPV, driver}, wantCSI: true,
			wantEvents: []string{ReasonMigrated}},
		{name: "out of the selector's scope", initial: []runtime.Object{labelled, driver}, opts: Options{PVSelector: labels.SelectorFromSet(labels.Set{"team": "b"})}},
		{name: "its claim is gone", initial: []runtime.Object{claimGone, driver}, wantEvents: []string{string(rewrite.CodeClaimGone)}, wantRecheck: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, rec, client := syncTest(t, tc)
			ctx := context.Background()
			before, err := client.CoreV1().PersistentVolumes().Get(ctx, "pv1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var after time.Duration
			for i := 0; ; i++ {
				var now bool
				if after, now, err = c.syncPV(ctx, "pv1"); err != nil {
					t.Fatalf("sync %d: %v", i, err)
				}
				if !now && (after == 0 || after >= c.o.Recheck || i > 30) {
					break
				}
				time.Sleep(10 * time.Millisecond) // the informers see the write
			}
			got, err := client.CoreV1().PersistentVolumes().Get(ctx, "pv1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantCSI && (got.Spec.CSI == nil || got.Spec.PersistentVolumeReclaimPolicy != before.Spec.PersistentVolumeReclaimPolicy) {
				t.Errorf("PV not rewritten: %+v", got.Spec)
			}
			if !tc.wantCSI && got.ResourceVersion != before.ResourceVersion {
				t.Errorf("PV changed: %+v", got)
			}
			var reasons []string
			for len(rec.Events) > 0 {
				e := <-rec.Events
				// "Warning KeptByReconciler message": the reason is the
				// second word.
				if r := strings.Fields(e)[1]; len(reasons) == 0 || reasons[len(reasons)-1] != r {
					reasons = append(reasons, r)
				}
			}
			if diff := cmp.Diff(tc.wantEvents, reasons); diff != "" {
				t.Errorf("Event reasons (-want +got):\n%s", diff)
			}
			if (after == c.o.Recheck) != tc.wantRecheck {
				t.Errorf("the last sync asks to look again after %s; want the recheck: %v", after, tc.wantRecheck)
			}
		})
	}
}

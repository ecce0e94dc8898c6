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

	"github.com/csimigrate/csimigrate/plugin"
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
		{name: "an in-tree PV is rewritten, a step an Event", initial: []runtime.Object{vspherePV("pv1"), driver}, wantCSI: true,
			wantEvents: []string{ReasonStep, ReasonMigrated}},
		{name: "no CSIDriver yet", initial: []runtime.Object{vspherePV("pv1")}, wantEvents: []string{ReasonWaitingForDriver}, wantRecheck: true},
		{name: "kept by a reconciler", initial: []runtime.Object{keptPV, driver}, wantEvents: []string{string(rewrite.CodeKeptByReconciler)}, wantRecheck: true},
		{name: "its source said changed", initial: []runtime.Object{changedPV, driver}, wantCSI: true,
			wantEvents: []string{ReasonStep, ReasonMigrated}},
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

// The pod informer keeps of a pod what names its claims, so that
// rewrite.PodClaims reads the same claims from the trimmed pod as from the
// pod, and nothing of its other volumes.
func TestTrimPodKeepsItsClaims(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0", UID: "u", Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{NodeName: "n1", Volumes: []v1.Volume{
			{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}},
			{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-0"}}},
			{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{}}}},
		}},
		Status: v1.PodStatus{Phase: v1.PodRunning}}
	before := pod.DeepCopy()
	obj, err := trimPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	trimmed := obj.(*v1.Pod)
	if diff := cmp.Diff(rewrite.PodClaims(pod.Name, &pod.Spec), rewrite.PodClaims(trimmed.Name, &trimmed.Spec)); diff != "" {
		t.Errorf("claims (-pod +trimmed):\n%s", diff)
	}
	if len(trimmed.Spec.Volumes) != 2 || trimmed.Spec.NodeName != "n1" || trimmed.Status.Phase != v1.PodRunning || trimmed.UID != "u" {
		t.Errorf("trimmed: %+v", trimmed)
	}
	if diff := cmp.Diff(before, pod); diff != "" {
		t.Errorf("the informer's pod was changed:\n%s", diff)
	}
}

// The main informers' transform: an in-tree PV whole, a provisioned CSI PV
// slim, a claim without its managed fields' contents and last-applied copy
// (its managers kept, for the keepers' rule).
func TestTrimObject(t *testing.T) {
	inTree := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
		RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{"10.0.0.1:6789"}, RBDImage: "img"}}}}
	if got, _ := trimObject(inTree); got != any(inTree) {
		t.Errorf("an in-tree PV was trimmed: %+v", got)
	}
	native := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "b", Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": plugin.RBDDriverName}},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: plugin.RBDDriverName,
			VolumeHandle:     "0001-0024-b7f67366-bb43-f32e-07d8-a261a7840da9-0000000000000002-6f1c0000-4b53-9a61-2b0c-1d9a7e110000",
			VolumeAttributes: map[string]string{"clusterID": "c", "pool": "kube", "imageName": "csi-vol-1", "storage.kubernetes.io/csiProvisionerIdentity": "x"}}}}}
	got, _ := trimObject(native)
	slim := got.(*v1.PersistentVolume)
	if slim == native || slim.Annotations != nil || len(slim.Spec.CSI.VolumeAttributes) != 3 {
		t.Errorf("a provisioned CSI PV was not slimmed: %+v", slim)
	}
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns",
		Annotations:   map[string]string{v1.LastAppliedConfigAnnotation: "{}", "team": "db"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "argocd-controller", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{}}}}}
	got, _ = trimObject(pvc)
	claim := got.(*v1.PersistentVolumeClaim)
	if _, ok := claim.Annotations[v1.LastAppliedConfigAnnotation]; ok || claim.Annotations["team"] != "db" {
		t.Errorf("annotations %v: want the last-applied copy gone, the rest kept", claim.Annotations)
	}
	if len(claim.ManagedFields) != 1 || claim.ManagedFields[0].Manager != "argocd-controller" || claim.ManagedFields[0].FieldsV1 != nil {
		t.Errorf("managed fields %+v: want the manager, no field set", claim.ManagedFields)
	}
	if len(rewrite.KeepersOf(claim)) == 0 {
		t.Error("the trimmed claim lost the evidence of its keeper")
	}
}

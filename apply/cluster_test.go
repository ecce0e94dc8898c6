package apply

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// What the writer's tests against a real kube-apiserver share beside
// testenv's objects: the server with kube-controller-manager's volume
// controllers, a writer whose events are text, and the PV comparisons.

// startWithControllerManager starts kube-apiserver of release r and
// kube-controller-manager's volume controllers; the test fails if they
// cannot start.
func startWithControllerManager(t *testing.T, r testenv.Release) (*testenv.Server, kubernetes.Interface) {
	t.Helper()
	s, err := testenv.StartRelease(os.Stderr, r)
	if err != nil {
		t.Fatalf("cannot start kube-apiserver %s: %v", r.Version, err)
	}
	t.Cleanup(s.Stop)
	if err := s.StartControllerManager(os.Stderr, testenv.VolumeControllers...); err != nil {
		t.Fatalf("cannot start kube-controller-manager %s: %v", r.Version, err)
	}
	return s, s.Client
}

// textEvents writes the writer's events as lines, for a test's messages.
type textEvents struct{ w *bytes.Buffer }

func (e textEvents) Writing(obj rewrite.ObjectRef, what string) {
	fmt.Fprintf(e.w, "%s: %s\n", obj.Resource(), what)
}
func (e textEvents) Noted(obj rewrite.ObjectRef, what string) {
	fmt.Fprintf(e.w, "%s: %s\n", obj.Resource(), what)
}
func (e textEvents) KeptRetain(pv rewrite.ObjectRef, why string) {
	fmt.Fprintf(e.w, "%s: kept at %s\n", pv.Resource(), why)
}
func (e textEvents) Refused(obj rewrite.ObjectRef, r *rewrite.Refusal) {
	fmt.Fprintf(e.w, "%s: refused, left as it was: %s\n", obj.Resource(), r.Reason)
}

// newWriter is a writer of the tests (state in kube-system) with the given
// options; its events go to out.
func newWriter(t testing.TB, c kubernetes.Interface, out *bytes.Buffer, o Options) *Writer {
	t.Helper()
	tr, err := translate.New(translate.WithNodeExpandSecret(false))
	if err != nil {
		t.Fatal(err)
	}
	o.StateNamespace = "kube-system"
	if o.Lease == nil {
		// The writer's other rules, one writer per test: the Lease's own
		// rule has TestWriterWritesOnlyHoldingLease.
		o.Lease = HolderFunc(func() bool { return true })
	}
	w, err := New(c, tr, klog0(), textEvents{out}, o)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// rewritePVs runs a writer with options o over the PVs named, then the
// StorageClasses named; it returns the writer (for Writes) and what its
// events said.
func rewritePVs(t testing.TB, c kubernetes.Interface, o Options, pvs []string, classes ...string) (*Writer, string, error) {
	t.Helper()
	var out bytes.Buffer
	w := newWriter(t, c, &out, o)
	ctx := context.Background()
	_, err := w.PVs(ctx, targetsOf(pvs))
	if err == nil && len(classes) > 0 {
		_, err = w.Classes(ctx, targetsOf(classes))
	}
	return w, out.String(), err
}

func targetsOf(names []string) []Target {
	out := make([]Target, len(names))
	for i, n := range names {
		out[i] = Target{Name: n}
	}
	return out
}

func getPV(t testing.TB, c kubernetes.Interface, name string) *v1.PersistentVolume {
	t.Helper()
	pv, err := c.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pv/%s: %v", name, err)
	}
	return pv
}

// classFields are a StorageClass's fields a user sets.
func classFields(sc *storagev1.StorageClass) *storagev1.StorageClass {
	out := sc.DeepCopy()
	out.ObjectMeta = metav1.ObjectMeta{Name: sc.Name, Labels: sc.Labels, Annotations: sc.Annotations}
	out.TypeMeta = metav1.TypeMeta{}
	return out
}

// noStateLeft fails if any state ConfigMap of the writer is left.
func noStateLeft(t *testing.T, c kubernetes.Interface) {
	t.Helper()
	cms, err := c.CoreV1().ConfigMaps("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=csimigrate"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != 0 {
		t.Errorf("%d saved replacements left", len(cms.Items))
	}
}

// unchanged fails unless the live PV is exactly before (same
// resourceVersion, so no write happened at all).
func unchanged(t *testing.T, c kubernetes.Interface, before *v1.PersistentVolume) {
	t.Helper()
	if diff := cmp.Diff(before, getPV(t, c, before.Name)); diff != "" {
		t.Errorf("pv/%s was changed (-before +now):\n%s", before.Name, diff)
	}
}

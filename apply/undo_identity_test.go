package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// Rewrite then undo is the identity on what the API server stores, over
// generated in-tree PVs (bound to claims that exist, or unbound) on
// Kubernetes 1.30, where the in-tree Ceph plugins still exist: a PV the
// rewrite refuses is left exactly as it was; every other one is rewritten
// and undone to its stored name, labels, annotations and spec.
func TestUndoIdentityOnServer(t *testing.T) {
	s, err := testenv.StartRelease(os.Stderr, testenv.V1_30)
	if err != nil {
		t.Fatalf("cannot start kube-apiserver %s: %v", testenv.V1_30.Version, err)
	}
	defer s.Stop()
	c := s.Client
	tr, err := translate.New(translate.WithNodeExpandSecret(false))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n, undone := 0, 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		pv := testenv.InTreePV(rt, tr)
		pv.Name = fmt.Sprintf("gen-%d", n)
		pv.ResourceVersion, pv.UID = "", ""
		if ref := pv.Spec.ClaimRef; ref != nil {
			ns := ref.Namespace
			if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				rt.Fatal(err)
			}
			ref.Name = pv.Name
			pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, testenv.ClaimFor(ns, pv.Name, pv.Name), metav1.CreateOptions{})
			if err != nil {
				rt.Fatal(err)
			}
			ref.UID = pvc.UID
		}
		testenv.EnsureSecrets(t, c, pv)
		created, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
		if err != nil {
			rt.Fatalf("the generated PV is not accepted: %v", err)
		}
		if _, out, err := rewritePVs(t, c, Options{}, []string{pv.Name}); err != nil {
			var ref *rewrite.Refusal
			if !errors.As(err, &ref) {
				rt.Fatalf("rewrite: %v\n%s", err, out)
			}
			if diff := cmp.Diff(created, getPVRapid(rt, c, pv.Name)); diff != "" {
				rt.Fatalf("a refused PV changed:\n%s", diff)
			}
			return
		}
		if _, out, err := rewritePVs(t, c, Options{Direction: Undo}, []string{pv.Name}); err != nil {
			rt.Fatalf("undo: %v\n%s", err, out)
		}
		undone++
		if diff := cmp.Diff(testenv.FieldsOf(created), testenv.FieldsOf(getPVRapid(rt, c, pv.Name))); diff != "" {
			rt.Fatalf("stored after rewrite and undo (-before +after):\n%s", diff)
		}
	})
	t.Logf("%d generated PVs, %d rewritten and undone", n, undone)
	if undone < n/4 {
		t.Errorf("only %d of %d generated PVs were rewritten and undone: the property says little", undone, n)
	}
}

func getPVRapid(t *rapid.T, c kubernetes.Interface, name string) *v1.PersistentVolume {
	pv, err := c.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pv/%s: %v", name, err)
	}
	return pv
}

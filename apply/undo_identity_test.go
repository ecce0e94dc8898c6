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

	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/testenv"
	"github.com/csimigrate/csimigrate/translate"
)

// inTreePV draws an in-tree PV as clusters store them: written by hand or by
// in-tree provisioning (RBD, CephFS, vSphere), or stored by a migrated
// external-provisioner for a volume its driver created (the library's
// reverse translation of the CSI PV, with csimigrate's overrides
// annotation).
func inTreePV(t *rapid.T, tr *translate.Translator) *v1.PersistentVolume {
	switch rapid.IntRange(0, 4).Draw(t, "kind") {
	case 0:
		return gen.RBDPV(t)
	case 1:
		return gen.CephFSPV(t, false)
	case 2:
		return gen.VSpherePV(t)
	}
	csi := gen.RBDProvisionedPV(t)
	if rapid.Bool().Draw(t, "vsphereProvisioned") {
		csi = gen.VSphereProvisionedPV(t)
	}
	pv, err := tr.TranslateCSIPVToInTree(csi)
	if err != nil {
		t.Fatalf("reverse translation of a provisioned PV: %v", err)
	}
	return pv
}

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
		pv := inTreePV(rt, tr)
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
		if _, out, err := rewritePVs(t, c, Options{Undo: true}, []string{pv.Name}); err != nil {
			rt.Fatalf("undo: %v\n%s", err, out)
		}
		undone++
		if diff := cmp.Diff(fieldsOf(created), fieldsOf(getPVRapid(rt, c, pv.Name))); diff != "" {
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

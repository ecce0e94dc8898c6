package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/plugins/cephfs"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/translate"
)

var server *Server

// TestMain starts one API server for the package. If it cannot start, every
// test fails with the reason: these tests never skip.
func TestMain(m *testing.M) {
	s, err := Start(os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: cannot start kube-apiserver: %v\n", err)
		os.Exit(1)
	}
	server = s
	code := m.Run()
	s.Stop()
	os.Exit(code)
}

// perPlugin is how many generated objects each acceptance test sends.
const perPlugin = 200

var dryRun = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

func createPV(pv *v1.PersistentVolume) error {
	pv = pv.DeepCopy()
	pv.ResourceVersion = ""
	_, err := server.Client.CoreV1().PersistentVolumes().Create(context.Background(), pv, dryRun)
	return err
}

var logger = klog.Background().V(100)

func translator(t *testing.T) *translate.Translator {
	tr, err := translate.New(translate.WithCephClusterConfig(ceph.NewClusterConfig()))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// Every generated in-tree PV is valid (the generators' premise); its forward
// translation is accepted; the reverse of that is accepted and equal to it.
func TestPVsAccepted(t *testing.T) {
	tr := translator(t)
	for name, g := range map[string]*rapid.Generator[*v1.PersistentVolume]{
		"rbd":     rapid.Custom(gen.RBDPV),
		"cephfs":  rapid.Custom(func(t *rapid.T) *v1.PersistentVolume { return gen.CephFSPV(t, false) }),
		"vsphere": rapid.Custom(gen.VSpherePV),
	} {
		t.Run(name, func(t *testing.T) {
			csiWithNodeExpand := 0
			for i := 0; i < perPlugin; i++ {
				pv := g.Example(i)
				if err := createPV(pv); err != nil {
					t.Fatalf("example %d: the generated in-tree PV is rejected: %v\n%+v", i, err, pv)
				}
				csi, err := tr.TranslateInTreePVToCSI(logger, pv)
				if err != nil {
					t.Fatalf("example %d: forward: %v", i, err)
				}
				if err := createPV(csi); err != nil {
					t.Fatalf("example %d: the API server rejects the translated PV: %v\n%+v", i, err, csi.Spec.CSI)
				}
				if csi.Spec.CSI.NodeExpandSecretRef != nil {
					csiWithNodeExpand++
				}
				back, err := tr.TranslateCSIPVToInTree(csi)
				if err != nil {
					t.Fatalf("example %d: reverse: %v", i, err)
				}
				if err := createPV(back); err != nil {
					t.Fatalf("example %d: the API server rejects the reverse translation: %v", i, err)
				}
			}
			if name == "rbd" && csiWithNodeExpand == 0 {
				t.Error("no translated PV carried a node-expand reference")
			}
		})
	}
}

// CSI PVs a driver provisioned for a migrated in-tree StorageClass are valid
// (the generators' premise); the in-tree PV external-provisioner stores, our
// reverse translation, is accepted, and so is its forward translation, which
// every attacher, resizer and kubelet computes.
func TestProvisionedPVsAccepted(t *testing.T) {
	tr := translator(t)
	for name, g := range map[string]*rapid.Generator[*v1.PersistentVolume]{
		"rbd":     rapid.Custom(gen.RBDProvisionedPV),
		"vsphere": rapid.Custom(gen.VSphereProvisionedPV),
	} {
		t.Run(name, func(t *testing.T) {
			for i := 0; i < perPlugin; i++ {
				pv := g.Example(i)
				if err := createPV(pv); err != nil {
					t.Fatalf("example %d: the generated CSI PV is rejected: %v\n%+v", i, err, pv)
				}
				stored, err := tr.TranslateCSIPVToInTree(pv)
				if err != nil {
					t.Fatalf("example %d: reverse: %v", i, err)
				}
				if err := createPV(stored); err != nil {
					t.Fatalf("example %d: the API server rejects the stored in-tree PV: %v\n%+v", i, err, stored)
				}
				again, err := tr.TranslateInTreePVToCSI(logger, stored)
				if err != nil {
					t.Fatalf("example %d: forward of the stored PV: %v", i, err)
				}
				if err := createPV(again); err != nil {
					t.Fatalf("example %d: the API server rejects the forward translation of the stored PV: %v\n%+v", i, err, again.Spec.CSI)
				}
			}
		})
	}
}

// PVs whose source holds odd but API-valid values: whatever the translator
// produces, the server accepts; otherwise the translator must refuse.
func TestOddPVsAcceptedOrRefused(t *testing.T) {
	tr := translator(t)
	odd := gen.HostileString()
	g := rapid.Custom(func(t *rapid.T) *v1.PersistentVolume {
		var pv *v1.PersistentVolume
		switch rapid.IntRange(0, 2).Draw(t, "plugin") {
		case 0:
			pv = gen.RBDPV(t)
			pv.Spec.RBD.RBDImage = odd.Draw(t, "image")
			pv.Spec.RBD.RBDPool = odd.Draw(t, "pool")
			pv.Spec.RBD.RadosUser = odd.Draw(t, "user")
			pv.Spec.RBD.CephMonitors = rapid.SliceOfN(odd, 1, 3).Draw(t, "mons")
			if rapid.IntRange(0, 3).Draw(t, "unboundNoNamespace") == 0 {
				// The namespace in-tree took from the pod: no claim says which.
				pv.Spec.ClaimRef = nil
				pv.Spec.RBD.SecretRef = &v1.SecretReference{Name: "ceph-secret"}
			}
		case 1:
			pv = gen.CephFSPV(t, true)
			pv.Spec.CephFS.Path = odd.Draw(t, "path")
			pv.Spec.CephFS.User = odd.Draw(t, "user")
			pv.Spec.MountOptions = rapid.SliceOf(odd).Draw(t, "mountOptions")
			if rapid.IntRange(0, 3).Draw(t, "unboundNoNamespace") == 0 {
				pv.Spec.ClaimRef = nil
				pv.Spec.CephFS.SecretRef = &v1.SecretReference{Name: "ceph-secret"}
			}
		default:
			pv = gen.VSpherePV(t)
			pv.Spec.VsphereVolume.VolumePath = odd.Draw(t, "path")
			pv.Spec.VsphereVolume.StoragePolicyName = odd.Draw(t, "policy")
		}
		return pv
	})
	accepted, refused, noNamespace := 0, 0, 0
	for i := 0; i < perPlugin*3; i++ {
		pv := g.Example(i)
		if createPV(pv) != nil {
			continue // not a valid API object to begin with
		}
		accepted++
		csi, err := tr.TranslateInTreePVToCSI(logger, pv)
		if err != nil {
			// A refusal names the field to set; a CephFS volume with only a
			// secret file has its own error, with the annotation to set.
			var fe *field.Error
			if !errors.As(err, &fe) && !errors.Is(err, cephfs.ErrSecretFileOnly) {
				t.Errorf("example %d: refused without naming a field: %v", i, err)
			}
			if pv.Spec.ClaimRef == nil && (pv.Spec.RBD != nil && pv.Spec.RBD.SecretRef != nil && pv.Spec.RBD.SecretRef.Namespace == "" ||
				pv.Spec.CephFS != nil && pv.Spec.CephFS.SecretRef != nil && pv.Spec.CephFS.SecretRef.Namespace == "" && pv.Spec.CephFS.SecretRef.Name != "") {
				noNamespace++
				if fe == nil || !strings.HasSuffix(fe.Field, "secretRef.namespace") {
					t.Errorf("example %d: a secret reference without a namespace on an unbound PV: %v", i, err)
				}
			}
			refused++
			continue
		}
		if err := createPV(csi); err != nil {
			t.Errorf("example %d: translated, but the API server rejects it: %v\nin-tree: %+v\nCSI: %+v", i, err, pv.Spec.PersistentVolumeSource, csi.Spec.CSI)
		}
	}
	t.Logf("%d odd PVs were valid in-tree objects; the translator refused %d of them (%d for a secret namespace no claim gives)", accepted, refused, noNamespace)
	if accepted == 0 || noNamespace == 0 {
		t.Fatal("no odd PV was a valid object, or none lacked a secret namespace: the test checks too little")
	}
}

// Translated StorageClasses are accepted.
func TestStorageClassesAccepted(t *testing.T) {
	tr := translator(t)
	for name, g := range map[string]*rapid.Generator[*storagev1.StorageClass]{
		"kubernetes.io/rbd":            rapid.Custom(gen.RBDStorageClass),
		"kubernetes.io/vsphere-volume": rapid.Custom(gen.VSphereStorageClass),
	} {
		t.Run(name, func(t *testing.T) {
			translated := 0
			for i := 0; i < perPlugin; i++ {
				sc := g.Example(i)
				if _, err := server.Client.StorageV1().StorageClasses().Create(context.Background(), sc, dryRun); err != nil {
					continue // the generated in-tree class is not valid itself
				}
				out, err := tr.TranslateInTreeStorageClassToCSI(logger, name, sc)
				if err != nil {
					continue // vSAN parameters and thick disks are refused by design
				}
				translated++
				if _, err := server.Client.StorageV1().StorageClasses().Create(context.Background(), out, dryRun); err != nil {
					t.Fatalf("example %d: the API server rejects the translated StorageClass: %v\n%+v", i, err, out)
				}
			}
			if translated < perPlugin/4 {
				t.Errorf("only %d of %d StorageClasses translated", translated, perPlugin)
			}
		})
	}
}

// PVs carrying node-expand references resolved from StorageClass templates
// are accepted, and so are the CSI secrets derived for CephFS.
func TestReferencesAndSecretsAccepted(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: gen.DNSSubdomain().Draw(rt, "pvc"), Namespace: gen.DNSLabel().Draw(rt, "ns"),
			Annotations: map[string]string{"team": gen.DNSLabel().Draw(rt, "team")}}}
		params := map[string]string{
			"csi.storage.k8s.io/node-expand-secret-name":      rapid.SampledFrom([]string{"${pvc.name}", "expand-${pvc.annotations['team']}", "fixed", "${pv.name}"}).Draw(rt, "name"),
			"csi.storage.k8s.io/node-expand-secret-namespace": rapid.SampledFrom([]string{"${pvc.namespace}", "kube-system", "${pv.name}"}).Draw(rt, "namespace"),
		}
		ref, err := secrets.Resolve(secrets.NodeExpand, params, secrets.Claim{PVName: gen.DNSLabel().Draw(rt, "pv"), PVC: pvc})
		if err != nil {
			return
		}
		pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: v1.PersistentVolumeSpec{
			Capacity:    v1.ResourceList{v1.ResourceStorage: *resourceQuantity()},
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "rbd.csi.ceph.com", VolumeHandle: "h",
				NodeExpandSecretRef: ref}}}}
		if err := createPV(pv); err != nil {
			rt.Fatalf("resolved reference %+v rejected: %v", ref, err)
		}
	})
	in := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cephfs-assets", Namespace: "default"}, Data: map[string][]byte{"key": []byte("AQD")}}
	for _, user := range []string{"", "admin", "client.x", "Weird_User", "a-very-long-user-name-" + string(make([]byte, 0))} {
		s, err := secrets.CephFSCSISecret(in, user)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := server.Client.CoreV1().Secrets("default").Create(context.Background(), s, dryRun); err != nil {
			t.Errorf("derived secret for user %q rejected: %v", user, err)
		}
	}
}

func TestServerFailureIsAnError(t *testing.T) {
	t.Setenv("CSIMIGRATE_KUBE_APISERVER", "/nonexistent/kube-apiserver")
	if _, err := Start(os.Stderr); err == nil || !errors.Is(err, os.ErrNotExist) && err.Error() == "" {
		t.Fatalf("Start with a missing binary: %v", err)
	}
}

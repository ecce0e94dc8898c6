package testenv

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/translate"
)

// The objects the tests of the writer and of the command create on a
// server: in-tree PVs of every plugin bound to their claims, and the
// Secrets their rewrite reads.

// Monitor is the Ceph monitor the seeded objects name (nothing listens
// there: the API server and the writer never reach Ceph).
const Monitor = "10.70.53.126:6789"

// Seed creates in-tree PVs of every plugin (ns-cephfs, ns-rbd: dynamically
// provisioned by the in-tree RBD class "rbd-<ns>", ns-rbd-static and
// ns-vsphere) and the claims bound to them (named by the plugin), in the
// namespace ns, which it creates, with the Secrets their rewrite reads; it
// returns the PV names, sorted.
func Seed(t testing.TB, c kubernetes.Interface, ns string) []string {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The in-tree class the dynamic RBD PV came from, with its admin secret.
	if _, err := c.CoreV1().Secrets("kube-system").Create(ctx, CephSecret("kube-system", "ceph-admin", nil), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "rbd-" + ns}, Provisioner: "kubernetes.io/rbd",
		Parameters: map[string]string{"monitors": Monitor, "adminSecretName": "ceph-admin", "adminSecretNamespace": "kube-system", "pool": "rbd"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sources := map[string]v1.PersistentVolumeSource{
		"rbd": {RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{Monitor}, RBDImage: "kubernetes-dynamic-pvc-" + ns, RBDPool: "rbd",
			RadosUser: "kube", SecretRef: &v1.SecretReference{Name: "ceph", Namespace: ns}}},
		"rbd-static": {RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{Monitor}, RBDImage: "static_" + ns, RBDPool: "rbd",
			SecretRef: &v1.SecretReference{Name: "ceph-admin-user", Namespace: ns}}}, // admin's key: not the secret of kube's volume
		"cephfs":  {CephFS: &v1.CephFSPersistentVolumeSource{Monitors: []string{Monitor}, Path: "/volumes/" + ns, SecretRef: &v1.SecretReference{Name: "cephfs"}}},
		"vsphere": {VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[vsanDatastore] kubevols/" + ns + ".vmdk", StoragePolicyName: "gold"}},
	}
	var names []string
	for _, kind := range slices.Sorted(maps.Keys(sources)) {
		name := ns + "-" + kind
		pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, ClaimFor(ns, kind, name), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pv := BoundPV(name, ns, kind, pvc.UID, sources[kind])
		if kind == "rbd" {
			pv.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": "kubernetes.io/rbd"}
			pv.Spec.StorageClassName = "rbd-" + ns
		}
		EnsureSecrets(t, c, pv)
		if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatalf("seeding %s: %v", name, err)
		}
		names = append(names, name)
	}
	return names
}

// CephSecret is an in-tree Ceph Secret with a key, and the extra fields.
func CephSecret(ns, name string, extra map[string]string) *v1.Secret {
	s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: "kubernetes.io/rbd",
		StringData: map[string]string{"key": "AQD1234567890abcdefghijklmnop=="}}
	maps.Copy(s.StringData, extra)
	return s
}

// ClaimFor is a 1Gi ReadWriteOnce claim without a class, pre-bound to
// volume.
func ClaimFor(ns, name, volume string) *v1.PersistentVolumeClaim {
	noClass := ""
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, VolumeName: volume,
			StorageClassName: &noClass, Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}
}

// BoundPV is a 1Gi ReadWriteOnce PV with reclaim policy Delete and
// pv-protection, bound to the claim ns/claim of uid, with the given source.
func BoundPV(name, ns, claim string, uid types.UID, src v1.PersistentVolumeSource) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{rewrite.PVProtection}},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: claim, UID: uid},
			PersistentVolumeSource:        src,
		},
	}
}

// RBDSource is the source of the RBD image kubernetes-dynamic-pvc-<name>,
// dynamically provisioned, with the Secret "ceph" of namespace ns.
func RBDSource(ns, name string) v1.PersistentVolumeSource {
	return v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{Monitor},
		RBDImage: "kubernetes-dynamic-pvc-" + name, RBDPool: "rbd", SecretRef: &v1.SecretReference{Name: "ceph", Namespace: ns}}}
}

// EnsureSecrets creates, where missing, the Secrets the rewrite of an
// in-tree Ceph PV makes Ceph CSI read, with what the driver reads (RBD: the
// key, and adminId for a non-admin user; CephFS: userID and userKey): the
// tests of the rewrite's other rules start from PVs whose Secrets are
// ready, as the writer requires.
func EnsureSecrets(t testing.TB, c kubernetes.Interface, pv *v1.PersistentVolume) {
	t.Helper()
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	logger := klog.Background().V(100)
	out, err := tr.TranslateInTreePVToCSI(logger, pv)
	if err != nil {
		return // the rewrite refuses it anyway
	}
	ctx := context.Background()
	needs := rewrite.SecretNeeds(pv, out)
	if name := pv.Spec.StorageClassName; name != "" && pv.Spec.RBD != nil {
		// The class's admin secret deletes the volume.
		if sc, err := c.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{}); err == nil && rewrite.TranslatableClass(tr, sc) {
			if ref, err := rewrite.ProvisionerSecret(tr, logger, pv, sc, nil); err == nil && ref != nil {
				needs = append(needs, rewrite.SecretNeed{Namespace: ref.Namespace, Name: ref.Name, Driver: secrets.CephRBDDriver, User: rewrite.ClassAdminID(sc)})
			}
		}
	}
	for _, need := range needs {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: need.Namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		const key = "AQD8P0ZmAAAAABAAa2V5LW9mLXRoZS10ZXN0cw=="
		data := map[string]string{"key": key}
		switch {
		case need.Driver == secrets.CephFSDriver:
			data = map[string]string{"userID": need.User, "userKey": key}
		case need.User != "" && need.User != secrets.CephDefaultUser:
			data["adminId"] = need.User
		}
		s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: need.Namespace, Name: need.Name}, StringData: data}
		if _, err := c.CoreV1().Secrets(need.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("secret %s: %v", need.Key(), err)
		}
	}
}

// WaitBound waits up to 60 s until every claim of ns is Bound to the PV of
// its name in names, and that PV is Bound to it.
func WaitBound(t testing.TB, c kubernetes.Interface, ns string, names []string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var pending []string
		for _, name := range names {
			pv, err := c.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || pv.Spec.ClaimRef == nil {
				pending = append(pending, fmt.Sprintf("pv/%s: %v", name, err))
				continue
			}
			pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, pv.Spec.ClaimRef.Name, metav1.GetOptions{})
			switch {
			case err != nil:
				pending = append(pending, err.Error())
			case pvc.Status.Phase != v1.ClaimBound || pvc.Spec.VolumeName != name || pvc.UID != pv.Spec.ClaimRef.UID || pv.Status.Phase != v1.VolumeBound:
				pending = append(pending, fmt.Sprintf("pvc %s/%s %s to %q, pv/%s %s", ns, pvc.Name, pvc.Status.Phase, pvc.Spec.VolumeName, name, pv.Status.Phase))
			}
		}
		if len(pending) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not bound after 60s: %s", strings.Join(pending, "; "))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// InTreePV draws an in-tree PV as clusters store them: written by hand or
// by in-tree provisioning (RBD, CephFS, vSphere), or stored by a migrated
// external-provisioner for a volume its driver created (the library's
// reverse translation of the CSI PV, with csimigrate's overrides
// annotation).
func InTreePV(t *rapid.T, tr *translate.Translator) *v1.PersistentVolume {
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

// StoredFields are what the comparison of a PV before a rewrite and after
// its undo covers: everything a user or controller set, not what the API
// server sets (uid, resourceVersion, timestamps, status) or finalizers
// (admission adds pv-protection, the owners of deletion protection add
// theirs).
type StoredFields struct {
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	Spec        v1.PersistentVolumeSpec
}

// FieldsOf are pv's stored fields, empty maps as nil.
func FieldsOf(pv *v1.PersistentVolume) StoredFields {
	a := pv.Annotations
	if len(a) == 0 {
		a = nil
	}
	l := pv.Labels
	if len(l) == 0 {
		l = nil
	}
	return StoredFields{Name: pv.Name, Labels: l, Annotations: a, Spec: pv.Spec}
}

// StoredOf reads the stored fields of the PVs named.
func StoredOf(t testing.TB, c kubernetes.Interface, names []string) map[string]StoredFields {
	t.Helper()
	out := map[string]StoredFields{}
	for _, n := range names {
		pv, err := c.CoreV1().PersistentVolumes().Get(context.Background(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pv/%s: %v", n, err)
		}
		out[n] = FieldsOf(pv)
	}
	return out
}

// CreateBoundPV creates, in namespace ns (made with its default
// ServiceAccount when missing), a claim name and a bound in-tree RBD PV
// name (BoundPV with RBDSource) changed by edit, with the Secrets its
// rewrite needs (EnsureSecrets); it returns the PV as created.
func CreateBoundPV(t testing.TB, c kubernetes.Interface, ns, name string, edit func(*v1.PersistentVolume)) *v1.PersistentVolume {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Pods need it (no controller-manager creates it here).
		if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, ClaimFor(ns, name, name), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv := BoundPV(name, ns, name, pvc.UID, RBDSource(ns, name))
	if edit != nil {
		edit(pv)
	}
	EnsureSecrets(t, c, pv)
	out, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Bound, as kube-controller-manager marks a pre-bound PV whose claim
	// names it (servers without it never would; where it runs, it may be
	// first).
	for range 10 {
		if out.Status.Phase == v1.VolumeBound {
			return out
		}
		out.Status.Phase = v1.VolumeBound
		updated, err := c.CoreV1().PersistentVolumes().UpdateStatus(ctx, out, metav1.UpdateOptions{})
		if err == nil {
			return updated
		}
		if !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
		if out, err = c.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("pv/%s: its status could not be set Bound", name)
	return nil
}

// RewrittenState is what a rewritten PV and its claim end as, comparable
// across namespaces (the handle, which names the image, only as set or
// not).
type RewrittenState struct {
	Driver    string
	HandleSet bool
	Claim     string
	Policy    v1.PersistentVolumeReclaimPolicy
	Capacity  string
	// Pending: a reclaim-policy annotation is left.
	Pending bool
}

// RewrittenStates reads the rewritten PVs names of namespace ns (keyed by
// name without the namespace's "ns-" prefix); it fails the test unless each
// is a CSI PV bound both ways to its claim, or if a state ConfigMap of the
// writer is left in kube-system.
func RewrittenStates(t testing.TB, c kubernetes.Interface, ns string, names []string) map[string]RewrittenState {
	t.Helper()
	ctx := context.Background()
	out := map[string]RewrittenState{}
	for _, name := range names {
		pv, err := c.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pv/%s: %v", name, err)
		}
		if pv.Spec.CSI == nil {
			t.Fatalf("pv/%s is not a CSI PV: %+v", name, pv.Spec.PersistentVolumeSource)
		}
		pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, pv.Spec.ClaimRef.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pvc.Spec.VolumeName != name || pvc.UID != pv.Spec.ClaimRef.UID {
			t.Errorf("pvc %s/%s points to %q (uid %s), PV claims uid %s", ns, pvc.Name, pvc.Spec.VolumeName, pvc.UID, pv.Spec.ClaimRef.UID)
		}
		q := pv.Spec.Capacity[v1.ResourceStorage]
		_, pending := pv.Annotations[rewrite.AnnReclaimPolicy]
		out[strings.TrimPrefix(name, ns+"-")] = RewrittenState{Driver: pv.Spec.CSI.Driver, HandleSet: pv.Spec.CSI.VolumeHandle != "", Claim: pvc.Name,
			Policy: pv.Spec.PersistentVolumeReclaimPolicy, Capacity: q.String(), Pending: pending}
	}
	cms, err := c.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=csimigrate"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != 0 {
		t.Errorf("%d saved replacements left", len(cms.Items))
	}
	return out
}

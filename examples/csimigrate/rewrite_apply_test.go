package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/testenv"
	"github.com/csimigrate/csimigrate/translate"
)

// startServer starts a real kube-apiserver; the test fails if it cannot.
// It returns a client and the path of a kubeconfig for it.
func startServer(t *testing.T) (kubernetes.Interface, string) {
	t.Helper()
	s, err := testenv.Start(os.Stderr)
	if err != nil {
		t.Fatalf("cannot start kube-apiserver: %v", err)
	}
	t.Cleanup(s.Stop)
	kc, err := s.WriteKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	return s.Client, kc
}

// seed creates in-tree PVs of every plugin and the PVCs bound to them, in
// a namespace of their own; it returns the PV names.
func seed(t *testing.T, c kubernetes.Interface, ns string) []string {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The in-tree class the dynamic RBD PV came from, with its admin secret.
	if _, err := c.CoreV1().Secrets("kube-system").Create(ctx, cephSecret("kube-system", "ceph-admin", nil), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "rbd-" + ns}, Provisioner: "kubernetes.io/rbd",
		Parameters: map[string]string{"monitors": "10.70.53.126:6789", "adminSecretName": "ceph-admin", "adminSecretNamespace": "kube-system", "pool": "rbd"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sources := map[string]v1.PersistentVolumeSource{
		"rbd": {RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{"10.70.53.126:6789"}, RBDImage: "kubernetes-dynamic-pvc-" + ns, RBDPool: "rbd",
			RadosUser: "kube", SecretRef: &v1.SecretReference{Name: "ceph", Namespace: ns}}},
		"rbd-static": {RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{"10.70.53.126:6789"}, RBDImage: "static_" + ns, RBDPool: "rbd",
			SecretRef: &v1.SecretReference{Name: "ceph-admin-user", Namespace: ns}}}, // admin's key: not the secret of kube's volume
		"cephfs":  {CephFS: &v1.CephFSPersistentVolumeSource{Monitors: []string{"10.70.53.126:6789"}, Path: "/volumes/" + ns, SecretRef: &v1.SecretReference{Name: "cephfs"}}},
		"vsphere": {VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[vsanDatastore] kubevols/" + ns + ".vmdk", StoragePolicyName: "gold"}},
	}
	var names []string
	for _, kind := range slices.Sorted(maps.Keys(sources)) {
		name := ns + "-" + kind
		pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claimFor(ns, kind, name), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pv := boundPV(name, ns, kind, pvc.UID, sources[kind])
		if kind == "rbd" {
			pv.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": "kubernetes.io/rbd"}
			pv.Spec.StorageClassName = "rbd-" + ns
		}
		ensureSecrets(t, c, pv)
		if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatalf("seeding %s: %v", name, err)
		}
		names = append(names, name)
	}
	return names
}

func ptr[T any](v T) *T { return &v }

// cephSecret is an in-tree Ceph secret with a key, and the extra fields.
func cephSecret(ns, name string, extra map[string]string) *v1.Secret {
	s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: "kubernetes.io/rbd",
		StringData: map[string]string{"key": "AQD1234567890abcdefghijklmnop=="}}
	for k, v := range extra {
		s.StringData[k] = v
	}
	return s
}

// claimFor is a 1Gi claim without a class, pre-bound to volume.
func claimFor(ns, name, volume string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, VolumeName: volume,
			StorageClassName: ptr(""), Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}
}

// boundPV is a 1Gi PV with reclaim policy Delete and pv-protection, bound
// to the claim ns/claim of uid, with the given source.
func boundPV(name, ns, claim string, uid types.UID, src v1.PersistentVolumeSource) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{pvProtection}},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: claim, UID: uid},
			PersistentVolumeSource:        src,
		},
	}
}

// rbdSource is a dynamically provisioned RBD image's source with a secret
// in namespace ns.
func rbdSource(ns, name string) v1.PersistentVolumeSource {
	return v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{"10.70.53.126:6789"},
		RBDImage: "kubernetes-dynamic-pvc-" + name, RBDPool: "rbd", SecretRef: &v1.SecretReference{Name: "ceph", Namespace: ns}}}
}

// endState is what must hold after a rewrite, as comparable values.
type pvState struct {
	Driver, Handle string
	Claim          string
	Policy         v1.PersistentVolumeReclaimPolicy
	Capacity       string
	Pending        bool // a reclaim-policy annotation is left
}

func endState(t *testing.T, c kubernetes.Interface, ns string, names []string) map[string]pvState {
	t.Helper()
	ctx := context.Background()
	out := map[string]pvState{}
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
		_, pending := pv.Annotations[AnnReclaimPolicy]
		out[name[len(ns)+1:]] = pvState{Driver: pv.Spec.CSI.Driver, Handle: pv.Spec.CSI.VolumeHandle, Claim: pv.Spec.ClaimRef.Name,
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

func targetsOf(names []string) []target {
	out := make([]target, len(names))
	for i, n := range names {
		out[i] = target{Name: n}
	}
	return out
}

func newApplier(c kubernetes.Interface, out *bytes.Buffer) *applier {
	var cm common
	tr, _ := cm.translator()
	return &applier{client: c, tr: tr, logger: klog0(), stateNS: "kube-system", out: out}
}

// normalise drops what differs between namespaces.
func normalise(m map[string]pvState) map[string]pvState {
	out := map[string]pvState{}
	for k, v := range m {
		v.Handle = ""
		out[k] = v
	}
	return out
}

func TestRewriteApplyEndToEnd(t *testing.T) {
	c, kc := startServer(t)
	ctx := context.Background()

	names := seed(t, c, "full")
	// The plan reads the live cluster.
	out, stderr, code := runCmd(t, "", "plan", "-live", "-kubeconfig", kc, "-o", "json")
	if code != exitOK && code != exitBlocked {
		t.Fatalf("plan -live: exit %d: %s", code, stderr)
	}
	for _, n := range names {
		if !strings.Contains(out, `"name": "`+n+`"`) {
			t.Errorf("plan -live does not list %s", n)
		}
	}
	// The server-side dry run of every step is accepted and changes nothing.
	if out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-dry-run", "-kubeconfig", kc); code != exitOK {
		t.Fatalf("dry run: exit %d: %s\n%s", code, stderr, out)
	}
	if pv, _ := c.CoreV1().PersistentVolumes().Get(ctx, names[0], metav1.GetOptions{}); pv.Spec.CSI != nil || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
		t.Fatalf("the dry run changed %s", names[0])
	}
	out, stderr, code = runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc)
	if code != exitOK {
		t.Fatalf("rewrite -apply: exit %d: %s\n%s", code, stderr, out)
	}
	want := endState(t, c, "full", names)
	// The static RBD image has a handle Ceph CSI resolves elsewhere, and no
	// class to take a deletion secret from: Retain. The CephFS volume is
	// static to Ceph CSI, which never deletes it: Retain, as the plan says.
	wantPolicies := map[string]v1.PersistentVolumeReclaimPolicy{"rbd": "Delete", "rbd-static": "Retain", "cephfs": "Retain", "vsphere": "Delete"}
	for k, s := range want {
		if s.Policy != wantPolicies[k] || s.Pending || s.Capacity != "1Gi" || s.Claim != k {
			t.Errorf("%s: %+v", k, s)
		}
	}
	// A second run changes nothing.
	if out, _, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc); code != exitOK || !strings.Contains(out, ", 0 steps taken") {
		t.Fatalf("second run: exit %d:\n%s", code, out)
	}
	total := strings.Count(out, "pv/")

	// A run killed after any number of steps resumes to the same end state.
	for k := 1; k < total/len(names)+2 && k < 12; k++ {
		ns := fmt.Sprintf("cut%d", k)
		names := seed(t, c, ns)
		cut := newApplier(c, &bytes.Buffer{})
		cut.stepLimit = k
		if _, err := cut.rewriteAll(ctx, targetsOf(names)); !errors.Is(err, errInterrupted) {
			t.Fatalf("k=%d: the interrupted run returned %v", k, err)
		}
		var out bytes.Buffer
		resume := newApplier(c, &out)
		if _, err := resume.rewriteAll(ctx, targetsOf(names)); err != nil {
			t.Fatalf("k=%d: resume: %v\n%s", k, err, out.String())
		}
		got := endState(t, c, ns, names)
		if diff := cmp.Diff(normalise(want), normalise(got)); diff != "" {
			t.Errorf("k=%d: end state after an interruption (-uninterrupted +resumed):\n%s", k, diff)
		}
	}
}

// ensureSecrets creates, where missing, the Secrets the rewrite of an
// in-tree Ceph PV makes Ceph CSI read, with what the driver reads (RBD: the
// key, and adminId for a non-admin user; CephFS: userID and userKey): the
// tests of the rewrite's other rules start from PVs whose secrets are
// ready, as rewrite -apply requires (secretRefusal).
func ensureSecrets(t testing.TB, c kubernetes.Interface, pv *v1.PersistentVolume) {
	t.Helper()
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	out, err := tr.TranslateInTreePVToCSI(klog0(), pv)
	if err != nil {
		return // the rewrite refuses it anyway
	}
	ctx := context.Background()
	needs := rewrite.SecretNeeds(pv, out)
	if name := pv.Spec.StorageClassName; name != "" && pv.Spec.RBD != nil {
		// The class's admin secret deletes the volume.
		if sc, err := c.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{}); err == nil && translatableClass(tr, sc) {
			if ref, err := rewrite.ProvisionerSecret(tr, klog0(), pv, sc, nil); err == nil && ref != nil {
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

// What the writer keeps in the cluster, as the tests look for it.
var (
	stateName    = apply.StateName
	scStateName  = apply.ClassStateName
	pvProtection = rewrite.PVProtection
)

const stateKey = "state.json"

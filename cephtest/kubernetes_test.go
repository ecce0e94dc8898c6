package cephtest

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os/exec"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/secrets"
)

// ProvisionerVersion is the external-provisioner release the chain runs.
const ProvisionerVersion = "v6.4.0"

// provisionerBinary is the csi-provisioner ../scripts/setup-ceph builds,
// or CSIMIGRATE_CSI_PROVISIONER.
func provisionerBinary() (string, error) {
	return cachedBinary("CSIMIGRATE_CSI_PROVISIONER", "csi-provisioner", ProvisionerVersion)
}

// poll calls cond every 250 ms until it returns true or d has passed.
func poll(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last: %s", d, what, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestCephKubernetesChain runs the whole migration of an in-tree RBD volume
// on a real control plane: kube-apiserver, kube-controller-manager's volume
// controllers and external-provisioner driving Ceph CSI's RBD controller.
// An in-tree PV bound to a claim, its image in Ceph; `csimigrate rewrite
// -apply` replaces the PV and its StorageClass; the claim stays bound; an
// expansion through the rewritten PV's controllerExpandSecretRef, resolved
// from the API server as external-resizer does, grows the image; deleting
// the claim makes external-provisioner delete the image from Ceph; a new
// claim on the recreated class provisions an image Ceph lists.
//
// On Kubernetes 1.30, the last release with the in-tree RBD plugin, the
// rewrite is undone and done again before the expansion: `rewrite -apply
// -undo` gives back the in-tree PV and class as they were stored (the image
// untouched), and the second rewrite gives the same CSI PV as the first.
//
// The chain on 1.37 (the rewrite, expansion, deletion and provisioning
// there, and the refused undo) is TestCephJourneyUpgrade130To137's second
// half, on the cluster upgraded from 1.30.
func TestCephKubernetesChain(t *testing.T) {
	kubernetesChain(t, testenv.V1_30)
}

func kubernetesChain(t testing.TB, release testenv.Release) {
	c, d := cephEnv(t)
	ctx := callCtx(t)
	pool, ns := "kube.rbd-3", "default"
	if release != testenv.V1_37 {
		pool = "kube.rbd-undo"
	}
	createPool(t, c, pool)
	image := "kubernetes-dynamic-pvc-" + NewUUID()
	if _, err := c.RBD(ctx, "create", "--size", "64M", pool+"/"+image); err != nil {
		t.Fatal(err)
	}

	var logs bytes.Buffer
	srv, err := testenv.StartRelease(&logs, release)
	if err != nil {
		t.Fatalf("kube-apiserver: %v\n%s", err, logs.String())
	}
	t.Cleanup(srv.Stop)
	if err := srv.StartControllerManager(&logs, testenv.VolumeControllers...); err != nil {
		t.Fatal(err)
	}
	kc, err := srv.WriteKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	prov, err := provisionerBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Spawn("csi-provisioner", prov, "--csi-address="+d.RBDSocket, "--kubeconfig="+kc, "--leader-election=false",
		"--timeout=60s", "--immediate-topology=false", "--retry-interval-start=1s", "--retry-interval-max=5s", "--v=4"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("external-provisioner:\n%s\nkube-controller-manager:\n%s\ncephcsi-rbd:\n%s",
				srv.Logs("csi-provisioner"), srv.Logs("kube-controller-manager"), d.Log("cephcsi-rbd"))
		}
	})
	cs := srv.Client

	// The cluster before: an in-tree class, its secret, a bound claim.
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ceph-admin", Namespace: ns}, Type: "kubernetes.io/rbd",
		Data: map[string][]byte{"key": []byte(c.AdminKey)}}
	sc := inTreeRBDClass("rbd", pool, secret.Name)
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: &sc.Name,
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("64Mi")}}}}
	// The PV first, pre-bound to the claim by name, so that the binder
	// never looks for a provisioner for the claim.
	pv := inTreeRBDPV("pvc-"+NewUUID(), rbdCase{Monitors: []string{MonitorV1}, Pool: pool, Image: image}, "admin", secret.Name)
	pv.Spec.StorageClassName = sc.Name
	pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: claim.Name}
	mustCreate(t, func() error {
		_, err := cs.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{})
		return err
	})
	waitBound(t, cs, ns, claim.Name, pv.Name)

	// The Ceph CSI config map the plan prints for the cluster is the
	// drivers' config.json; then the rewrite.
	configure(t, d, sc, pv)
	stored, err := cs.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	storedSC, err := cs.StorageV1().StorageClasses().Get(ctx, sc.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rewritten := rewriteChain(t, cs, kc, pv.Name, sc.Name)
	if release == testenv.V1_37 {
		// The undo is refused: no kubelet of 1.31 or later mounts an
		// in-tree RBD PV.
		out, err := exec.Command(envBin, "rewrite", "-apply", "-undo", "-kubeconfig", kc, pv.Name, "storageclass/"+sc.Name).CombinedOutput()
		if err == nil || !bytes.Contains(out, []byte("1.31 removed the in-tree plugin kubernetes.io/rbd")) {
			t.Fatalf("undo on %s: %v\n%s", release.Version, err, out)
		}
		if now, err := cs.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{}); err != nil || now.ResourceVersion != rewritten.ResourceVersion {
			t.Fatalf("the refused undo changed the PV: %v", err)
		}
	} else {
		size := images(t, c, pool)[image]
		undoChain(t, cs, kc, stored, storedSC, ns, claim.Name)
		if got, ok := images(t, c, pool)[image]; !ok || got != size {
			t.Errorf("image %s/%s after the undo: listed %t, size %d (was %d)", pool, image, ok, got, size)
		}
		again := rewriteChain(t, cs, kc, pv.Name, sc.Name)
		if diff := cmp.Diff(storedFieldsOf(rewritten), storedFieldsOf(again)); diff != "" {
			t.Errorf("the rewrite after the undo differs from the first (-first +again):\n%s", diff)
		}
		rewritten = again
	}
	// The claim stays bound to the same PV, through a few binder syncs.
	time.Sleep(5 * time.Second)
	waitBound(t, cs, ns, claim.Name, pv.Name)

	// Expand as external-resizer does: the secret named by the PV's
	// controllerExpandSecretRef, read from the API server.
	ref := rewritten.Spec.CSI.ControllerExpandSecretRef
	if ref == nil {
		t.Fatal("the rewritten PV has no controllerExpandSecretRef")
	}
	expandSecret, err := cs.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("controllerExpandSecretRef %s/%s: %v", ref.Namespace, ref.Name, err)
	}
	if _, err := d.RBD.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: rewritten.Spec.CSI.VolumeHandle,
		CapacityRange: &csi.CapacityRange{RequiredBytes: expandSize}, Secrets: secrets.SecretStringData(expandSecret), VolumeCapability: mountCap("ext4")}); err != nil {
		t.Fatalf("ControllerExpandVolume: %v", err)
	}
	if got := images(t, c, pool)[image]; got != expandSize {
		t.Errorf("image size %d after the expansion, want %d", got, expandSize)
	}

	// Deleting the claim: kube-controller-manager releases the PV and
	// external-provisioner deletes the image.
	if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 90*time.Second, "external-provisioner to delete the PV", func() (bool, string) {
		p, err := cs.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, string(p.Status.Phase) + " " + p.Status.Message
	})
	if _, ok := images(t, c, pool)[image]; ok {
		t.Errorf("%s/%s is still listed after external-provisioner deleted the PV", pool, image)
	}
	if !trash(t, c, pool)[image] && !gone(t, c, pool, image) {
		t.Errorf("%s/%s is neither in the trash nor purged", pool, image)
	}

	// A new claim on the recreated class.
	claim2 := claim.DeepCopy()
	claim2.Name = "data2"
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim2, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var volumeName string
	poll(t, 90*time.Second, "the new claim to be provisioned and bound", func() (bool, string) {
		p, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim2.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		volumeName = p.Spec.VolumeName
		return p.Status.Phase == v1.ClaimBound, string(p.Status.Phase)
	})
	newPV, err := cs.CoreV1().PersistentVolumes().Get(ctx, volumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	newImage := newPV.Spec.CSI.VolumeAttributes["imageName"]
	if _, ok := images(t, c, pool)[newImage]; !ok || newPV.Spec.CSI.VolumeAttributes["pool"] != pool {
		t.Errorf("Ceph does not list the provisioned image %s/%s (volume attributes %v)", pool, newImage, newPV.Spec.CSI.VolumeAttributes)
	}
	// And its claim deleted, its image goes too.
	if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, claim2.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 90*time.Second, "external-provisioner to delete the provisioned PV", func() (bool, string) {
		_, err := cs.CoreV1().PersistentVolumes().Get(ctx, volumeName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if _, ok := images(t, c, pool)[newImage]; ok {
		t.Errorf("%s/%s is still listed after its claim was deleted", pool, newImage)
	}
}

// rewriteChain runs csimigrate rewrite -apply on the PV and class and
// returns the PV, checked to be a Ceph CSI PV with reclaim policy Delete.
func rewriteChain(t testing.TB, cs kubernetes.Interface, kc, pvName, scName string) *v1.PersistentVolume {
	t.Helper()
	ctx := context.Background()
	serveDriverConfig(t, cs)
	out, err := exec.Command(envBin, "rewrite", "-apply", "-kubeconfig", kc, pvName, "storageclass/"+scName).CombinedOutput()
	if err != nil {
		t.Fatalf("csimigrate rewrite -apply: %v\n%s", err, out)
	}
	t.Logf("csimigrate rewrite -apply:\n%s", out)
	rewritten, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rewritten.Spec.CSI == nil || rewritten.Spec.CSI.Driver != "rbd.csi.ceph.com" {
		t.Fatalf("the PV after the rewrite is not a Ceph CSI volume: %+v", rewritten.Spec.PersistentVolumeSource)
	}
	if rewritten.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
		t.Errorf("reclaim policy %q after the rewrite, want Delete", rewritten.Spec.PersistentVolumeReclaimPolicy)
	}
	newSC, err := cs.StorageV1().StorageClasses().Get(ctx, scName, metav1.GetOptions{})
	if err != nil || newSC.Provisioner != "rbd.csi.ceph.com" {
		t.Fatalf("StorageClass %s after the rewrite: %v %v", scName, newSC.Provisioner, err)
	}
	return rewritten
}

// undoChain runs csimigrate rewrite -apply -undo on the PV and class and
// checks that they are again as stored before the rewrite, the claim bound.
func undoChain(t testing.TB, cs kubernetes.Interface, kc string, stored *v1.PersistentVolume, storedSC *storagev1.StorageClass, ns, claim string) {
	t.Helper()
	ctx := context.Background()
	out, err := exec.Command(envBin, "rewrite", "-apply", "-undo", "-kubeconfig", kc, stored.Name, "storageclass/"+storedSC.Name).CombinedOutput()
	if err != nil {
		t.Fatalf("csimigrate rewrite -apply -undo: %v\n%s", err, out)
	}
	t.Logf("csimigrate rewrite -apply -undo:\n%s", out)
	waitBound(t, cs, ns, claim, stored.Name)
	undone, err := cs.CoreV1().PersistentVolumes().Get(ctx, stored.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(storedFieldsOf(stored), storedFieldsOf(undone)); diff != "" {
		t.Errorf("the in-tree PV after the undo (-before the rewrite +after the undo):\n%s", diff)
	}
	sc, err := cs.StorageV1().StorageClasses().Get(ctx, storedSC.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Provisioner != storedSC.Provisioner || !maps.Equal(sc.Parameters, storedSC.Parameters) || !maps.Equal(sc.Annotations, storedSC.Annotations) {
		t.Errorf("StorageClass after the undo: %s %v %v, before the rewrite %s %v %v", sc.Provisioner, sc.Parameters, sc.Annotations, storedSC.Provisioner, storedSC.Parameters, storedSC.Annotations)
	}
}

// storedFieldsOf are a PV's name, labels, annotations and spec: what a
// rewrite and its undo give back (not what the API server or controllers
// set: uid, resourceVersion, status, finalizers).
func storedFieldsOf(pv *v1.PersistentVolume) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pv.Name, Labels: pv.Labels, Annotations: pv.Annotations}, Spec: pv.Spec}
}

func mustCreate(t testing.TB, f func() error) {
	t.Helper()
	if err := f(); err != nil {
		t.Fatal(err)
	}
}

// waitBound waits until the claim is Bound to the named PV and the PV to
// the claim.
func waitBound(t testing.TB, cs kubernetes.Interface, ns, claim, pv string) {
	t.Helper()
	ctx := context.Background()
	poll(t, 60*time.Second, "claim "+ns+"/"+claim+" bound to "+pv, func() (bool, string) {
		c, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		p, err := cs.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ok := c.Status.Phase == v1.ClaimBound && c.Spec.VolumeName == pv && p.Status.Phase == v1.VolumeBound &&
			p.Spec.ClaimRef != nil && p.Spec.ClaimRef.UID == c.UID
		return ok, fmt.Sprintf("claim %s (volume %q), PV %s", c.Status.Phase, c.Spec.VolumeName, p.Status.Phase)
	})
}

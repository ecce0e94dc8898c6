package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/secrets"
)

func getPV(t *testing.T, c kubernetes.Interface, name string) *v1.PersistentVolume {
	t.Helper()
	pv, err := c.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pv/%s: %v", name, err)
	}
	return pv
}

// unchanged fails unless the live PV is exactly before (same
// resourceVersion, so no write happened at all).
func unchanged(t *testing.T, c kubernetes.Interface, before *v1.PersistentVolume) {
	t.Helper()
	now := getPV(t, c, before.Name)
	if diff := cmp.Diff(before, now); diff != "" {
		t.Errorf("pv/%s was changed (-before +now):\n%s", before.Name, diff)
	}
}

// noState fails if a state ConfigMap exists for the PV.
func noState(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	if _, err := c.CoreV1().ConfigMaps("kube-system").Get(context.Background(), apply.StateName(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap for %s: %v (want none)", name, err)
	}
}

func writeJSONFile(t *testing.T, objs ...any) string {
	t.Helper()
	list := map[string]any{"apiVersion": "v1", "kind": "List", "items": objs}
	b, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "reviewed.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func asListItem(pv *v1.PersistentVolume) *v1.PersistentVolume {
	pv = pv.DeepCopy()
	pv.APIVersion, pv.Kind = "v1", "PersistentVolume"
	return pv
}

func TestRewriteApplySafety(t *testing.T) {
	c, kc := startServer(t)
	ctx := context.Background()
	rewriteApply := func(args ...string) (string, string, int) {
		return runCmd(t, "", append([]string{"rewrite", "-apply", "-kubeconfig", kc}, args...)...)
	}

	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{{"rewrite", "-dry-run"}, {"rewrite", "-state-namespace", "x"}, {"rewrite", "pvc/x"}, {"rewrite", "-apply", "-live", "-kubeconfig", kc}} {
			if _, stderr, code := runCmd(t, "", args...); code != cli.ExitUsage {
				t.Errorf("%q: exit %d, want %d: %s", args, code, cli.ExitUsage, stderr)
			}
		}
	})

	t.Run("scope", func(t *testing.T) {
		a := testenv.CreateBoundPV(t, c, "scope", "scope-a", nil)
		b := testenv.CreateBoundPV(t, c, "scope", "scope-b", nil)
		other := testenv.CreateBoundPV(t, c, "scope", "scope-c", nil)
		reviewed := writeJSONFile(t, asListItem(a), asListItem(b))
		// Names narrow the reviewed input.
		if out, stderr, code := rewriteApply("-f", reviewed, "scope-a"); code != cli.ExitOK {
			t.Fatalf("exit %d: %s\n%s", code, stderr, out)
		}
		if getPV(t, c, "scope-a").Spec.CSI == nil {
			t.Error("scope-a was not rewritten")
		}
		unchanged(t, c, b)
		unchanged(t, c, other)
		// A PV named but not in the reviewed input is a usage error.
		if _, _, code := rewriteApply("-f", reviewed, "scope-c"); code != cli.ExitUsage {
			t.Errorf("a name outside the input: exit %d", code)
		}
		unchanged(t, c, other)
		// A reviewed PV replaced since the review (same name, new uid).
		deletePV(t, c, "scope-b")
		deletePVC(t, c, "scope", "scope-b")
		b2 := testenv.CreateBoundPV(t, c, "scope", "scope-b", nil)
		out, _, code := rewriteApply("-f", reviewed)
		if code != cli.ExitBlocked || !strings.Contains(out, "pv/scope-b: refused") || !strings.Contains(out, "reviewed one "+string(b.UID)) {
			t.Errorf("exit %d:\n%s", code, out)
		}
		unchanged(t, c, b2)
		unchanged(t, c, other)
	})

	refusedCases := []struct {
		name, why string
		edit      func(*v1.PersistentVolume)
		after     func(t *testing.T, pv *v1.PersistentVolume) *v1.PersistentVolume
	}{
		{name: "extra-finalizer", why: `finalizers ["example.com/hold"]`, edit: func(pv *v1.PersistentVolume) {
			pv.Finalizers = append(pv.Finalizers, "example.com/hold")
		}},
		{name: "deleting", why: "being deleted", edit: func(pv *v1.PersistentVolume) {
			pv.Finalizers = append(pv.Finalizers, "example.com/hold")
		}, after: func(t *testing.T, pv *v1.PersistentVolume) *v1.PersistentVolume {
			// An admin's delete, held by a third-party finalizer.
			if err := c.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			return getPV(t, c, pv.Name)
		}},
		{name: "blocked", why: "the volume authenticates with a key file on the node", edit: func(pv *v1.PersistentVolume) {
			pv.Spec.RBD = nil
			pv.Spec.CephFS = &v1.CephFSPersistentVolumeSource{Monitors: []string{"10.70.53.126:6789"}, SecretFile: "/etc/ceph/admin.secret"}
		}},
		{name: "claim-deleting", why: "is being deleted", after: func(t *testing.T, pv *v1.PersistentVolume) *v1.PersistentVolume {
			// Held by pvc-protection, which admission adds.
			if err := c.CoreV1().PersistentVolumeClaims(pv.Spec.ClaimRef.Namespace).Delete(ctx, pv.Spec.ClaimRef.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			return pv
		}},
		{name: "claim-gone", why: "does not exist", after: func(t *testing.T, pv *v1.PersistentVolume) *v1.PersistentVolume {
			deletePVC(t, c, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
			return pv
		}},
		{name: "in-use", why: "in use by refused/app-0", after: func(t *testing.T, pv *v1.PersistentVolume) *v1.PersistentVolume {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app-0", Namespace: pv.Spec.ClaimRef.Namespace}, Spec: v1.PodSpec{
				Containers: []v1.Container{{Name: "app", Image: "registry.example/app:1"}},
				Volumes:    []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: pv.Spec.ClaimRef.Name}}}}}}
			if _, err := c.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			return pv
		}},
	}
	for _, tc := range refusedCases {
		t.Run(tc.name, func(t *testing.T) {
			name := "ref-" + tc.name
			pv := testenv.CreateBoundPV(t, c, "refused", name, tc.edit)
			if tc.after != nil {
				pv = tc.after(t, pv)
			}
			out, _, code := rewriteApply(name)
			if code != cli.ExitBlocked || !refusedWith(out, "pv/"+name, "") || !strings.Contains(out, tc.why) {
				t.Errorf("exit %d, want %d and %q:\n%s", code, cli.ExitBlocked, tc.why, out)
			}
			unchanged(t, c, pv)
			noState(t, c, name)
		})
	}

	t.Run("deletable", func(t *testing.T) {
		if _, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1StorageClass, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		testenv.CreateBoundPV(t, c, "deletable", "deletable", func(pv *v1.PersistentVolume) {
			pv.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": "kubernetes.io/rbd"}
			pv.Spec.StorageClassName = storagev1StorageClass.Name
		})
		if out, stderr, code := rewriteApply("deletable"); code != cli.ExitOK {
			t.Fatalf("exit %d: %s\n%s", code, stderr, out)
		}
		pv := getPV(t, c, "deletable")
		want := map[string]string{"pv.kubernetes.io/provisioned-by": "rbd.csi.ceph.com", plugin.AnnOriginalProvisionedBy: "kubernetes.io/rbd",
			secrets.AnnDeletionSecretName: "ceph-admin", secrets.AnnDeletionSecretNamespace: "ceph"}
		for k, v := range want {
			if pv.Annotations[k] != v {
				t.Errorf("annotation %s = %q, want %q", k, pv.Annotations[k], v)
			}
		}
		if pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
			t.Errorf("reclaim policy %s", pv.Spec.PersistentVolumeReclaimPolicy)
		}
		// The reverse translation gives the in-tree PV its annotation back.
		tr, _ := (&cli.Common{}).Translator()
		back, err := tr.TranslateCSIPVToInTree(pv)
		if err != nil {
			t.Fatal(err)
		}
		if got := back.Annotations["pv.kubernetes.io/provisioned-by"]; got != "kubernetes.io/rbd" {
			t.Errorf("reverse: provisioned-by %q", got)
		}
	})
}

// deletePV deletes a PV for good (no controller-manager removes
// pv-protection here).
func deletePV(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	if err := c.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pv := getPV(t, c, name)
	pv.Finalizers = nil
	if _, err := c.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c, name)
}

func waitGone(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	for i := 0; i < 100; i++ {
		if _, err := c.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		sleep()
	}
	t.Fatalf("pv/%s is still there", name)
}

var storagev1StorageClass = storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "rbd-deletable"}, Provisioner: "kubernetes.io/rbd",
	Parameters: map[string]string{"monitors": "10.70.53.126:6789", "adminSecretName": "ceph-admin", "adminSecretNamespace": "ceph"}}

func sleep() { time.Sleep(50 * time.Millisecond) }

// deletePVC deletes a claim for good (no controller-manager removes
// pvc-protection here).
func deletePVC(t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	ctx := context.Background()
	pvcs := c.CoreV1().PersistentVolumeClaims(ns)
	if err := pvcs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		pvc, err := pvcs.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if err == nil && len(pvc.Finalizers) > 0 {
			pvc.Finalizers = nil
			_, _ = pvcs.Update(ctx, pvc, metav1.UpdateOptions{})
		}
		sleep()
	}
	t.Fatalf("pvc %s/%s is still there", ns, name)
}

// In-tree StorageClasses in scope are replaced by their CSI form, also after
// an interruption at each step; a class the driver would reject is refused
// and left as it was.
func TestRewriteApplyStorageClasses(t *testing.T) {
	c, kc := startServer(t)
	ctx := context.Background()
	mk := func(name, provisioner string, params map[string]string) *storagev1.StorageClass {
		sc, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}}, Provisioner: provisioner, Parameters: params}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	rbdParams := map[string]string{"monitors": "10.70.53.126:6789", "adminSecretName": "ceph-admin", "adminSecretNamespace": "ceph", "pool": "kube"}
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ceph"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A class whose admin secret is missing is refused; so is one whose
	// non-admin adminId the secret does not name (Ceph CSI would connect
	// as client.admin), until the secret names it.
	noSecret := mk("nosecret", "kubernetes.io/rbd", rbdParams)
	kubeParams := map[string]string{"monitors": "10.70.53.126:6789", "adminId": "kube", "adminSecretName": "ceph-kube", "adminSecretNamespace": "ceph"}
	kube := mk("kube", "kubernetes.io/rbd", kubeParams)
	if _, err := c.CoreV1().Secrets("ceph").Create(ctx, testenv.CephSecret("ceph", "ceph-kube", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		args := []string{"rewrite", "-apply", "-kubeconfig", kc}
		if dry {
			args = append(args, "-dry-run")
		}
		args = append(args, "storageclass/nosecret", "storageclass/kube")
		out, stderr, code := runCmd(t, "", args...)
		if code != cli.ExitBlocked || !strings.Contains(out+stderr, "ceph/ceph-admin does not exist") || !strings.Contains(out+stderr, "add adminId: kube to Secret ceph/ceph-kube") {
			t.Errorf("dry run %v: exit %d: %s\n%s", dry, code, stderr, out)
		}
		for _, sc := range []*storagev1.StorageClass{noSecret, kube} {
			if now, _ := c.StorageV1().StorageClasses().Get(ctx, sc.Name, metav1.GetOptions{}); now.ResourceVersion != sc.ResourceVersion {
				t.Errorf("refused class %s was changed", sc.Name)
			}
		}
	}
	if _, err := c.CoreV1().Secrets("ceph").Update(ctx, testenv.CephSecret("ceph", "ceph-kube", map[string]string{"adminId": "kube"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc, "storageclass/kube"); code != cli.ExitOK {
		t.Fatalf("with adminId in the secret: exit %d: %s\n%s", code, stderr, out)
	}
	if _, err := c.CoreV1().Secrets("ceph").Create(ctx, testenv.CephSecret("ceph", "ceph-admin", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.StorageV1().StorageClasses().Delete(ctx, "nosecret", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	mk("fast", "kubernetes.io/rbd", rbdParams)
	thick := mk("thick", "kubernetes.io/vsphere-volume", map[string]string{"diskformat": "eagerzeroedthick"})
	other := mk("other", "example.com/driver", nil)

	out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc, "storageclass/fast", "storageclass/thick")
	if code != cli.ExitBlocked || !refusedWith(out, "storageclass/thick", "") {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	got, err := c.StorageV1().StorageClasses().Get(ctx, "fast", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Provisioner != "rbd.csi.ceph.com" || got.Parameters["pool"] != "kube" || got.Parameters["csi.storage.k8s.io/provisioner-secret-name"] != "ceph-admin" ||
		got.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" || got.Annotations[rewrite.AnnMigratedFrom] != "kubernetes.io/rbd" {
		t.Errorf("replaced class: %+v", got)
	}
	if now, _ := c.StorageV1().StorageClasses().Get(ctx, "thick", metav1.GetOptions{}); now.ResourceVersion != thick.ResourceVersion {
		t.Error("the refused class was changed")
	}
	if now, _ := c.StorageV1().StorageClasses().Get(ctx, "other", metav1.GetOptions{}); now.ResourceVersion != other.ResourceVersion {
		t.Error("a class out of scope was changed")
	}
	// "fast" is already replaced: named again, it is reported done (exit
	// 0); a run over the whole cluster leaves it as it is (and refuses
	// "thick" again).
	if out, _, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc, "storageclass/fast"); code != cli.ExitOK || !strings.Contains(out, "storageclass/fast: already rewritten; nothing to do") {
		t.Errorf("naming the replaced class: exit %d:\n%s", code, out)
	}
	if out, _, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc); code != cli.ExitBlocked || !strings.Contains(out, "0 PersistentVolumes and 0 StorageClasses rewritten") {
		t.Errorf("second run: exit %d:\n%s", code, out)
	}
	if now, _ := c.StorageV1().StorageClasses().Get(ctx, "fast", metav1.GetOptions{}); now.ResourceVersion != got.ResourceVersion {
		t.Error("the second run changed the replaced class")
	}
}

// A PV that running pods use is refused by default; with -online it is
// rewritten only where the kubelet of the pods' node migrates the plugin and
// kube-controller-manager attaches the volume as CSI (VolumeAttachment by
// the driver), and then left exactly as it was otherwise. On 1.30, whose
// kubelets can migrate RBD (the plan blocks an online rewrite past the
// removal, and the run refuses it with the plan's verdict).
func TestRewriteApplyOnline(t *testing.T) {
	s, err := testenv.StartRelease(os.Stderr, testenv.V1_30)
	if err != nil {
		t.Fatalf("cannot start kube-apiserver %s: %v", testenv.V1_30.Version, err)
	}
	t.Cleanup(s.Stop)
	kc, err := s.WriteKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	c := s.Client
	ctx := context.Background()
	pv := testenv.CreateBoundPV(t, c, "online", "online-a", nil)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app-0", Namespace: "online"}, Spec: v1.PodSpec{NodeName: "n1",
		Containers: []v1.Container{{Name: "app", Image: "registry.example/app:1"}},
		Volumes:    []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "online-a"}}}}}}
	if _, err := c.CoreV1().Pods("online").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	try := func(want string, args ...string) {
		t.Helper()
		out, stderr, code := runCmd(t, "", append([]string{"rewrite", "-apply", "-kubeconfig", kc}, append(args, "online-a")...)...)
		if code != cli.ExitBlocked || !strings.Contains(out, want) {
			t.Fatalf("exit %d, want %d and %q: %s\n%s", code, cli.ExitBlocked, want, stderr, out)
		}
		unchanged(t, c, pv)
	}
	try("stop the pods online/app-0")
	try("the node plugin of rbd.csi.ceph.com is not registered on node(s) n1", "-online")
	cn := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "rbd.csi.ceph.com", NodeID: "n1"}}}}
	cn, err = c.StorageV1().CSINodes().Create(ctx, cn, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	try("does not migrate kubernetes.io/rbd", "-online")
	cn.Annotations = map[string]string{"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/rbd"}
	if _, err := c.StorageV1().CSINodes().Update(ctx, cn, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	try("no VolumeAttachment of this PV on node n1", "-online")
	name := "online-a"
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-0123"}, Spec: storagev1.VolumeAttachmentSpec{Attacher: "rbd.csi.ceph.com", NodeName: "n1",
		Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &name}}}
	if _, err := c.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Named for another handle: kube-controller-manager would attach anew.
	try("is not named for the replacement's handle", "-online")
	if err := c.StorageV1().VolumeAttachments().Delete(ctx, va.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, _ := (&cli.Common{}).Translator()
	csi, err := tr.TranslateInTreePVToCSI(cli.Klog0(), pv)
	if err != nil {
		t.Fatal(err)
	}
	va.Name = featuregate.AttachmentName(csi.Spec.CSI.VolumeHandle, "rbd.csi.ceph.com", "n1")
	if _, err := c.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	try("stop the pods online/app-0") // still refused without -online
	if out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc, "-online", "online-a"); code != cli.ExitOK {
		t.Fatalf("-online: exit %d: %s\n%s", code, stderr, out)
	}
	if got := getPV(t, c, "online-a"); got.Spec.CSI == nil || got.Spec.CSI.Driver != "rbd.csi.ceph.com" {
		t.Errorf("not rewritten: %+v", got.Spec.PersistentVolumeSource)
	}
	// The review takes -online too (a PV in use's verdict depends on it).
	if _, stderr, code := runCmd(t, "", "rewrite", "-sample", "-online"); code == cli.ExitUsage {
		t.Errorf("-online without -apply: exit %d: %s", code, stderr)
	}
}

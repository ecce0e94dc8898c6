package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/secrets"
)

// genCluster creates, in namespace ns, n in-tree PVs drawn from rng with
// what a real cluster holds around them: bound, released, unbound and
// pre-bound PVs; RBD PVs of in-tree classes whose admin secret is there or
// not; Ceph secrets present or missing, with or without adminId for a
// non-admin user; vSphere paths with and without .vmdk, multi-zone labels;
// both reclaim policies. It returns the names of the bound PVs.
func genCluster(t *testing.T, c kubernetes.Interface, rng *rand.Rand, ns string, n int) []string {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	must(err)
	mons := []string{"10.70.53.126:6789"}
	// The class's admin secret is there in two of three clusters.
	class := ns + "-rbd"
	_, err = c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: plugin.RBDInTreePluginName,
		Parameters: map[string]string{"monitors": mons[0], "adminSecretName": "admin", "adminSecretNamespace": ns, "pool": "rbd"}}, metav1.CreateOptions{})
	must(err)
	if rng.IntN(3) > 0 {
		_, err = c.CoreV1().Secrets(ns).Create(ctx, testenv.CephSecret(ns, "admin", nil), metav1.CreateOptions{})
		must(err)
	}
	var bound []string
	for i := range n {
		name := fmt.Sprintf("%s-%d", ns, i)
		user := []string{"", "admin", "kube"}[rng.IntN(3)]
		secret := "s" + strconv.Itoa(i)
		var src v1.PersistentVolumeSource
		var labels map[string]string
		sc := ""
		switch rng.IntN(4) {
		case 0:
			src.RBD = &v1.RBDPersistentVolumeSource{CephMonitors: mons, RBDImage: "kubernetes-dynamic-pvc-" + name, RBDPool: "rbd", RadosUser: user,
				SecretRef: &v1.SecretReference{Name: secret, Namespace: ns}}
			sc = class
		case 1:
			ref := &v1.SecretReference{Name: secret}
			if rng.IntN(2) == 0 {
				ref.Namespace = ns
			}
			src.RBD = &v1.RBDPersistentVolumeSource{CephMonitors: mons, RBDImage: []string{"static-" + name, "img_" + name}[rng.IntN(2)], RBDPool: "rbd", RadosUser: user, SecretRef: ref}
		case 2:
			src.CephFS = &v1.CephFSPersistentVolumeSource{Monitors: mons, Path: "/volumes/" + name, User: user, SecretRef: &v1.SecretReference{Name: secret}}
		default:
			path := "[vsanDatastore] kubevols/" + name
			if rng.IntN(2) == 0 {
				path += ".vmdk"
			}
			src.VsphereVolume = &v1.VsphereVirtualDiskVolumeSource{VolumePath: path}
			if rng.IntN(2) == 0 {
				labels = map[string]string{v1.LabelFailureDomainBetaZone: "zone-a__zone-b", v1.LabelFailureDomainBetaRegion: "r1"}
			}
		}
		if src.VsphereVolume == nil && rng.IntN(4) > 0 {
			extra := map[string]string{}
			if user != "" && rng.IntN(2) == 0 {
				extra["adminId"] = user
			}
			_, err := c.CoreV1().Secrets(ns).Create(ctx, testenv.CephSecret(ns, secret, extra), metav1.CreateOptions{})
			must(err)
		}
		pv := &v1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: v1.PersistentVolumeSpec{
				Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: []v1.PersistentVolumeReclaimPolicy{v1.PersistentVolumeReclaimDelete, v1.PersistentVolumeReclaimRetain}[rng.IntN(2)],
				StorageClassName:              sc,
				PersistentVolumeSource:        src,
			},
		}
		if sc != "" {
			pv.Annotations = map[string]string{plugin.AnnProvisionedBy: plugin.RBDInTreePluginName}
		}
		claim := "c" + strconv.Itoa(i)
		switch rng.IntN(5) {
		case 0: // unbound
		case 1: // released: the claim is gone
			pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: claim, UID: types.UID("gone-" + name)}
		case 2: // pre-bound to a claim that does not exist yet
			pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: claim}
		default:
			pvc := testenv.ClaimFor(ns, claim, name)
			pvc.Spec.StorageClassName = ptr(sc)
			created, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{})
			must(err)
			pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: claim, UID: created.UID}
			bound = append(bound, name)
		}
		_, err = c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
		must(err)
	}
	return bound
}

// A "ready" plan is true on a live cluster with kube-controller-manager:
// over generated clusters, rewrite -apply rewrites every PV the plan calls
// migratable and refuses none of them; it refuses every PV the plan says
// it refuses, changing nothing; the PVs it keeps at Retain are those the
// plan names; and the secrets and Ceph clusters the plan lists are exactly
// those the rewritten PVs reference that the cluster lacks or must change.
func TestReadyPlanRewrites(t *testing.T) {
	_, c, kc := startWithControllerManager(t)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CSIMIGRATE_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (CSIMIGRATE_SEED reproduces it)", seed)
	rng := rand.New(rand.NewPCG(seed, 24))
	ctx := context.Background()
	sawReady, sawRefused, sawKept := 0, 0, 0
	for round := range 3 {
		ns := fmt.Sprintf("ready%d", round)
		bound := genCluster(t, c, rng, ns, 10)
		testenv.WaitBound(t, c, ns, bound)

		p, stderr, code := planOf(t, "-live", "-kubeconfig", kc)
		if code == cli.ExitUsage || code == cli.ExitInput {
			t.Fatalf("plan: exit %d: %s", code, stderr)
		}
		var ready, refused, kept []string
		for _, v := range p.Volumes {
			if !strings.HasPrefix(v.Name, ns+"-") {
				continue
			}
			if v.Migratable {
				ready = append(ready, v.Name)
			}
			for _, f := range v.Findings {
				switch f.Code {
				case plan.FindingRewriteRefuses, plan.FindingSecretNotReady, plan.FindingSecretMissing:
					// rewrite -apply reads the secrets by the plan's rule.
					if !slices.Contains(refused, v.Name) {
						refused = append(refused, v.Name)
					}
				case plan.FindingReclaimKept:
					if v.Migratable {
						kept = append(kept, v.Name)
					}
				}
			}
		}
		before := map[string]*v1.PersistentVolume{}
		for _, name := range refused {
			before[name] = getPV(t, c, name)
		}
		// Every PV the plan calls ready is rewritten; none is refused.
		if len(ready) > 0 {
			out, stderr, code := runCmd(t, "", append([]string{"rewrite", "-apply", "-kubeconfig", kc}, ready...)...)
			if code != cli.ExitOK || strings.Contains(out, "left as it was") {
				t.Fatalf("seed %d: rewrite -apply of the PVs the plan calls ready: exit %d\n%s\n%s", seed, code, out, stderr)
			}
			var gotKept []string
			for _, line := range strings.Split(out, "\n") {
				if name, ok := strings.CutPrefix(line, "pv/"); ok && strings.Contains(name, ": kept at reclaim policy Retain") {
					gotKept = append(gotKept, name[:strings.IndexByte(name, ':')])
				}
			}
			slices.Sort(gotKept)
			slices.Sort(kept)
			if !slices.Equal(gotKept, kept) {
				t.Errorf("seed %d: rewrite kept %q at Retain, the plan named %q\n%s", seed, gotKept, kept, out)
			}
			for _, name := range ready {
				if pv := getPV(t, c, name); pv.Spec.CSI == nil {
					t.Errorf("pv/%s is not a CSI PV after the rewrite", name)
				}
			}
			testenv.WaitBound(t, c, ns, slices.DeleteFunc(slices.Clone(bound), func(n string) bool { return !slices.Contains(ready, n) }))
		}
		// Every PV the plan says the rewrite refuses is refused and left as
		// it was.
		for _, name := range refused {
			out, _, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", kc, name)
			if code != cli.ExitBlocked || !refusedWith(out, "pv/"+name, "") {
				t.Errorf("seed %d: pv/%s: the plan says the rewrite refuses it, the rewrite: exit %d\n%s", seed, name, code, out)
			}
			if now := getPV(t, c, name); now.ResourceVersion != before[name].ResourceVersion {
				t.Errorf("pv/%s changed", name)
			}
		}
		// The secrets the rewritten PVs reference: each is in the cluster
		// with what Ceph CSI reads (a PV whose secret the plan lists is
		// not ready); and the plan lists none they do not reference (of
		// this namespace's PVs).
		for _, name := range ready {
			pv := getPV(t, c, name)
			for _, ref := range []*v1.SecretReference{pv.Spec.CSI.NodeStageSecretRef, pv.Spec.CSI.ControllerExpandSecretRef} {
				if ref == nil {
					continue
				}
				s, err := c.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
				if err != nil {
					t.Errorf("seed %d: pv/%s was called ready and references secret %s/%s: %v", seed, name, ref.Namespace, ref.Name, err)
					continue
				}
				driver := secrets.CephRBDDriver
				if pv.Spec.CSI.Driver == secrets.CephFSDriver {
					driver = secrets.CephFSDriver
				}
				if _, err := secrets.CephCSISecretReady(s, driver, pv.Annotations["rbd.csimigrate.io/user"]); err != nil {
					t.Errorf("seed %d: pv/%s was called ready; its secret %s/%s: %v", seed, name, ref.Namespace, ref.Name, err)
				}
			}
			if id := pv.Spec.CSI.VolumeAttributes["clusterID"]; id != "" && !slices.ContainsFunc(p.CephClusters, func(e ceph.ClusterEntry) bool { return e.ClusterID == id }) {
				t.Errorf("seed %d: pv/%s names clusterID %s, which the plan's config map lacks", seed, name, id)
			}
		}
		for _, sp := range p.Secrets {
			if sp.Namespace != ns {
				continue
			}
			if !referenced(t, c, ns, sp) {
				t.Errorf("seed %d: the plan lists secret %s/%s (%s), which no PV or class of the namespace references", seed, sp.Namespace, sp.Name, sp.Action)
			}
		}
		sawReady += len(ready)
		sawRefused += len(refused)
		sawKept += len(kept)
	}
	t.Logf("%d PVs ready and rewritten, %d refused as planned, %d kept at Retain as planned", sawReady, sawRefused, sawKept)
	if sawReady == 0 || sawRefused == 0 {
		t.Errorf("the generator reached %d ready and %d refused PVs; it must reach both", sawReady, sawRefused)
	}
}

// referenced reports whether a planned secret is one a PV or class of ns
// references (for a derived CephFS secret: its source).
func referenced(t *testing.T, c kubernetes.Interface, ns string, sp plan.SecretPlan) bool {
	t.Helper()
	ctx := context.Background()
	pvs, err := c.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pv := range pvs.Items {
		if !strings.HasPrefix(pv.Name, ns+"-") {
			continue
		}
		var refs []*v1.SecretReference
		switch {
		case pv.Spec.CSI != nil:
			refs = append(refs, pv.Spec.CSI.NodeStageSecretRef, pv.Spec.CSI.ControllerExpandSecretRef)
		case pv.Spec.RBD != nil:
			refs = append(refs, pv.Spec.RBD.SecretRef)
		case pv.Spec.CephFS != nil:
			refs = append(refs, pv.Spec.CephFS.SecretRef)
		}
		for _, r := range refs {
			if r == nil {
				continue
			}
			rns := r.Namespace
			if rns == "" && pv.Spec.ClaimRef != nil {
				rns = pv.Spec.ClaimRef.Namespace
			}
			if rns == sp.Namespace && (r.Name == sp.Name || sp.From == rns+"/"+r.Name) {
				return true
			}
		}
	}
	return sp.Name == "admin" // the in-tree class's admin secret
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
	"github.com/csimigrate/csimigrate/rewrite"
)

// planOf runs plan -o json with args and decodes the plan. Input from
// files is read with the CSIDrivers of a cluster that runs the drivers
// under their upstream names from Ceph CSI's manifests, serving the field
// inputs' cluster entries (the field files are manifests as published, not
// dumps of a cluster).
func planOf(t *testing.T, args ...string) (*plan.Plan, string, int) {
	t.Helper()
	if slices.Contains(args, "-f") {
		args = append(args, "-f", "testdata/drivers-upstream.yaml", "-f", "testdata/ceph-csi-manifests.yaml")
	}
	out, stderr, code := runCmd(t, "", append([]string{"plan", "-o", "json"}, args...)...)
	var p plan.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan output: %v\n%s\n%s", err, out, stderr)
	}
	return &p, stderr, code
}

func codesOf(p *plan.Plan) []string {
	var out []string
	for _, f := range p.Hazards {
		out = append(out, f.Code)
	}
	for _, v := range p.Volumes {
		for _, f := range v.Findings {
			out = append(out, v.Name+":"+f.Code)
		}
	}
	return out
}

func volume(t *testing.T, p *plan.Plan, name string) plan.VolumePlan {
	t.Helper()
	i := slices.IndexFunc(p.Volumes, func(v plan.VolumePlan) bool { return v.Name == name })
	if i < 0 {
		t.Fatalf("no volume %s in %+v", name, p.Volumes)
	}
	return p.Volumes[i]
}

func secretPlanned(p *plan.Plan, ns, name string) *plan.SecretPlan {
	for i, s := range p.Secrets {
		if s.Namespace == ns && s.Name == name {
			return &p.Secrets[i]
		}
	}
	return nil
}

// Input as clusters and published docs hold it (testdata/field): each
// class of input the plan once called "ready" wrongly.
func TestFieldInputs(t *testing.T) {
	t.Run("inline Ceph volumes of pods without a namespace", func(t *testing.T) {
		p, stderr, code := planOf(t, "-f", "testdata/field/inline-ceph.yaml")
		if code != cli.ExitBlocked || !p.Blocked {
			t.Fatalf("exit %d, blocked %v", code, p.Blocked)
		}
		if !strings.Contains(stderr, `4 namespaced object(s) without metadata.namespace were read as in namespace "default"`) {
			t.Errorf("stderr: %s", stderr)
		}
		var got []string
		for _, v := range p.InlineVolumes {
			if v.Migratable {
				t.Errorf("%s %s: migratable", v.Workload, v.Volume)
			}
			got = append(got, v.Workload+"/"+v.Volume+"/"+v.Plugin)
		}
		want := []string{"Pod default/rbd/rbdpd/kubernetes.io/rbd", "Pod default/rbd2/rbdpd/kubernetes.io/rbd", "Pod default/cephfs2/cephfs/kubernetes.io/cephfs"}
		if !slices.Equal(got, want) {
			t.Errorf("inline volumes %q, want %q", got, want)
		}
		if r := p.InlineVolumes[0].Reason; !strings.Contains(r, "no secret reference") || !strings.Contains(r, "secretRef in the Pod's manifest") {
			t.Errorf("keyring-only RBD: %s", r)
		}
		// What the CephFS volume's PV form references is listed: the
		// derived node-stage secret and its cluster.
		if s := secretPlanned(p, "default", "ceph-secret-csi-admin"); s == nil || s.Action != "create" || s.From != "default/ceph-secret" {
			t.Errorf("secrets %+v", p.Secrets)
		}
		id := ceph.EntryFor([]string{"10.16.154.78:6789", "10.16.154.82:6789", "10.16.154.83:6789"}).ClusterID
		if len(p.CephClusters) != 1 || p.CephClusters[0].ClusterID != id {
			t.Errorf("clusters %+v, want %s", p.CephClusters, id)
		}
		if slices.ContainsFunc(p.FeatureGates, func(s string) bool { return strings.Contains(s, "vsphere") }) {
			t.Errorf("gate steps for a plugin not in the input: %q", p.FeatureGates)
		}
		// -n names the namespace, as kubectl's.
		p, stderr, _ = planOf(t, "-n", "ceph-apps", "-f", "testdata/field/inline-ceph.yaml")
		if s := secretPlanned(p, "ceph-apps", "ceph-secret-csi-admin"); s == nil || !strings.Contains(stderr, `"ceph-apps"`) {
			t.Errorf("-n: %+v %s", p.Secrets, stderr)
		}
	})
	t.Run("workloads, claim templates, a class's non-admin adminId", func(t *testing.T) {
		p, stderr, code := planOf(t, "-f", "testdata/field/workloads.yaml")
		if code != cli.ExitBlocked {
			t.Fatalf("exit %d", code)
		}
		if !strings.Contains(stderr, "ignored: Service (1)") {
			t.Errorf("stderr does not name the ignored kind: %s", stderr)
		}
		if len(p.InlineVolumes) != 1 {
			t.Fatalf("inline volumes %+v", p.InlineVolumes)
		}
		iv := p.InlineVolumes[0]
		if iv.Workload != "Deployment shop/web" || iv.Migratable || !slices.Equal(iv.Via, []string{"Pod shop/web-6d4cf56db6-x7k2p", "ReplicaSet shop/web-6d4cf56db6"}) {
			t.Errorf("inline %+v", iv)
		}
		if len(p.ClaimTemplates) != 1 || p.ClaimTemplates[0].StorageClass != "fast" || p.ClaimTemplates[0].Migratable {
			t.Errorf("claim templates %+v", p.ClaimTemplates)
		}
		if len(p.StorageClasses) != 1 || p.StorageClasses[0].Migratable || !strings.Contains(p.StorageClasses[0].Reason, "add adminId: kube to Secret kube-system/ceph-secret") {
			t.Errorf("classes %+v", p.StorageClasses)
		}
		if !slices.Contains(codesOf(p), plan.FindingClassSecretNeedsAdminId) {
			t.Errorf("codes %q", codesOf(p))
		}
		if s := secretPlanned(p, "kube-system", "ceph-secret"); s == nil || s.Action != "add" || !slices.Equal(s.Fields, []string{"adminId=kube"}) {
			t.Errorf("secrets %+v", p.Secrets)
		}
	})
	t.Run("PVs: two zones, released, secret without namespace", func(t *testing.T) {
		p, _, code := planOf(t, "-f", "testdata/field/pvs.yaml")
		if code != cli.ExitBlocked {
			t.Fatalf("exit %d", code)
		}
		if v := volume(t, p, "released-rbd"); v.Migratable || !slices.Contains(codesOf(p), "released-rbd:"+string(rewrite.CodeClaimGone)) {
			t.Errorf("released: %+v", v)
		}
		if v := volume(t, p, "rbd-nons"); !v.Migratable || len(v.Findings) > 0 {
			t.Errorf("secret without namespace: %+v", v)
		}
		for _, s := range p.Secrets {
			if s.Namespace == "" {
				t.Errorf("a secret without namespace: %+v", s)
			}
		}
		if v := volume(t, p, "pvc-zones"); !v.Migratable {
			t.Errorf("zones: %+v", v)
		}
		out, _, _ := runCmd(t, "", "translate", "-f", "testdata/field/pvs.yaml")
		if !strings.Contains(out, "- zone-a\n          - zone-b\n") || strings.Contains(out, "zone-a__zone-b\n          ") {
			t.Errorf("multi-zone label not split:\n%s", out)
		}
	})
	t.Run("a secret the input lacks, claims the input lacks", func(t *testing.T) {
		in := `apiVersion: v1
kind: PersistentVolume
metadata: {name: a}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  claimRef: {namespace: apps, name: data, uid: "1234"}
  rbd: {monitors: [10.0.0.1:6789], image: kubernetes-dynamic-pvc-a, secretRef: {name: s, namespace: apps}}
`
		out, _, code := runCmd(t, in, "plan", "-o", "json", "-f", "-")
		if code != cli.ExitBlocked || !strings.Contains(out, plan.FindingClaimNotChecked) || !strings.Contains(out, plan.FindingSecretsNotChecked) ||
			!strings.Contains(out, plan.FindingCSIDriversNotChecked) {
			t.Errorf("exit %d:\n%s", code, out)
		}
		in += "---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: apps, uid: \"1234\"}\nspec: {volumeName: a}\n" +
			"---\napiVersion: v1\nkind: Secret\nmetadata: {name: other, namespace: apps}\n"
		out, _, code = runCmd(t, in, "plan", "-o", "json", "-f", "-")
		if code != cli.ExitBlocked || strings.Contains(out, plan.FindingClaimNotChecked) || !strings.Contains(out, `"`+plan.FindingSecretMissing+`"`) {
			t.Errorf("exit %d:\n%s", code, out)
		}
		in += "---\napiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: apps}\nstringData: {key: AQ==}\n"
		if out, _, code = runCmd(t, in, "plan", "-f", "-"); code != cli.ExitBlocked || !strings.Contains(out, plan.FindingCSIDriversNotChecked) {
			t.Errorf("without CSIDrivers: exit %d:\n%s", code, out)
		}
		in += "---\napiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: rbd.csi.ceph.com}\n"
		if out, _, code = runCmd(t, in, "plan", "-f", "-"); code != cli.ExitBlocked || !strings.Contains(out, plan.FindingCephCSIConfigNotFound) {
			t.Errorf("without the driver's config map: exit %d:\n%s", code, out)
		}
		in += "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: ceph-csi-config, namespace: ceph-csi}\ndata: {config.json: '[]'}\n"
		if out, _, code = runCmd(t, in, "plan", "-f", "-"); code != cli.ExitBlocked || !strings.Contains(out, plan.FindingCephClusterEntryMissing) {
			t.Errorf("without the volume's entry: exit %d:\n%s", code, out)
		}
		in = strings.Replace(in, "config.json: '[]'", `config.json: '[{"clusterID":"6d34dafc1f01fb9c42fd3dc84e3422de","monitors":["10.0.0.1:6789"]}]'`, 1)
		if out, _, code = runCmd(t, in, "plan", "-f", "-"); code != cli.ExitOK || !strings.HasSuffix(out, "RESULT: ready to migrate\n") {
			t.Errorf("exit %d:\n%s", code, out)
		}
	})
	t.Run("JSON lists no PVs as [], not null", func(t *testing.T) {
		out, _, _ := runCmd(t, "", "plan", "-o", "json", "-f", "testdata/field/workloads.yaml")
		if !strings.Contains(out, `"volumes": []`) {
			t.Errorf("%s", out)
		}
	})
	t.Run("a vSphere class naming a datastore cluster", func(t *testing.T) {
		in := "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: ds}\nprovisioner: kubernetes.io/vsphere-volume\nparameters: {datastore: DatastoreCluster/ds1}\n"
		out, _, code := runCmd(t, in, "plan", "-o", "json", "-f", "-")
		if code != cli.ExitBlocked || !strings.Contains(out, "datastore cluster") {
			t.Errorf("exit %d: %s", code, out)
		}
	})
	t.Run("translate -h lists only translate's flags", func(t *testing.T) {
		help, _, _ := runCmd(t, "", "translate", "-h")
		for _, f := range []string{"-kubernetes-version", "-ceph-csi-namespace", "-read-secrets"} {
			if strings.Contains(help, f) {
				t.Errorf("translate -h lists %s", f)
			}
		}
		if !strings.Contains(help, "-inline-capacity") {
			t.Errorf("translate -h: %s", help)
		}
	})
}

// docs splits YAML documents into objects of their kinds.
func docs(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for _, d := range strings.Split(out, "---\n") {
		if strings.TrimSpace(d) == "" {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("%v\n%s", err, d)
		}
		objs = append(objs, m)
	}
	return objs
}

// translate's output for inline volumes (a CSI PV, its claim, the
// workload using the claim) is accepted by kube-apiserver, names are valid,
// and the three refer to each other; no selfLink is printed.
func TestTranslateInlineAccepted(t *testing.T) {
	c, _ := startServer(t)
	ctx := context.Background()
	for _, ns := range []string{"shop", "default"} {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && ns != "default" {
			t.Fatal(err)
		}
		// No controller manager runs: the service account pods need.
		if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dry := []string{metav1.DryRunAll}
	for _, tc := range []struct {
		file string
		code int
		pvs  int
	}{
		{"testdata/field/inline-ceph.yaml", cli.ExitBlocked, 2}, // the keyring-only RBD volume fails, named
		{"testdata/field/workloads.yaml", cli.ExitOK, 1},
	} {
		out, stderr, code := runCmd(t, "", "translate", "-f", tc.file)
		if code != tc.code {
			t.Fatalf("%s: exit %d: %s", tc.file, code, stderr)
		}
		if strings.Contains(out, "selfLink") {
			t.Errorf("selfLink printed")
		}
		pvs := map[string]*v1.PersistentVolume{}
		claims := map[string]*v1.PersistentVolumeClaim{}
		var users []string
		for _, m := range docs(t, out) {
			b, _ := json.Marshal(m)
			switch m["kind"] {
			case "PersistentVolume":
				var pv v1.PersistentVolume
				mustJSON(t, b, &pv)
				if errs := validation.IsDNS1123Subdomain(pv.Name); len(errs) > 0 || pv.Spec.CSI == nil || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain {
					t.Errorf("PV %q: %v %+v", pv.Name, errs, pv.Spec)
				}
				if _, err := c.CoreV1().PersistentVolumes().Create(ctx, &pv, metav1.CreateOptions{DryRun: dry}); err != nil {
					t.Errorf("PV %s: %v", pv.Name, err)
				}
				pvs[pv.Name] = &pv
			case "PersistentVolumeClaim":
				var pvc v1.PersistentVolumeClaim
				mustJSON(t, b, &pvc)
				if _, err := c.CoreV1().PersistentVolumeClaims(pvc.Namespace).Create(ctx, &pvc, metav1.CreateOptions{DryRun: dry}); err != nil {
					t.Errorf("claim %s: %v", pvc.Name, err)
				}
				claims[pvc.Name] = &pvc
			case "Pod":
				var pod v1.Pod
				mustJSON(t, b, &pod)
				if _, err := c.CoreV1().Pods(pod.Namespace).Create(ctx, &pod, metav1.CreateOptions{DryRun: dry}); err != nil {
					t.Errorf("pod %s: %v", pod.Name, err)
				}
				users = append(users, claimsOf(pod.Spec)...)
			case "Deployment":
				var d appsv1.Deployment
				mustJSON(t, b, &d)
				if _, err := c.AppsV1().Deployments(d.Namespace).Create(ctx, &d, metav1.CreateOptions{DryRun: dry}); err != nil {
					t.Errorf("deployment %s: %v", d.Name, err)
				}
				users = append(users, claimsOf(d.Spec.Template.Spec)...)
			case "StorageClass":
				var sc storagev1.StorageClass
				mustJSON(t, b, &sc)
				if _, err := c.StorageV1().StorageClasses().Create(ctx, &sc, metav1.CreateOptions{DryRun: dry}); err != nil {
					t.Errorf("class %s: %v", sc.Name, err)
				}
			default:
				t.Errorf("%s: unexpected %v", tc.file, m["kind"])
			}
		}
		if len(pvs) != tc.pvs || len(claims) != tc.pvs {
			t.Errorf("%s: %d PVs and %d claims, want %d", tc.file, len(pvs), len(claims), tc.pvs)
		}
		for name, pv := range pvs {
			pvc := claims[name]
			if pvc == nil || pvc.Spec.VolumeName != name || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Name != name || pv.Spec.ClaimRef.Namespace != pvc.Namespace {
				t.Errorf("PV %s and its claim do not refer to each other: %+v %+v", name, pv.Spec.ClaimRef, pvc)
			}
			if !slices.Contains(users, name) {
				t.Errorf("no workload uses claim %s (%q)", name, users)
			}
			if pv.Spec.CSI.Driver == vsphere.DriverName && !strings.HasSuffix(pv.Spec.CSI.VolumeHandle, ".vmdk") {
				t.Errorf("vSphere handle %q", pv.Spec.CSI.VolumeHandle)
			}
			if pv.Spec.CSI.Driver == rbd.DriverName && pv.Spec.CSI.NodeStageSecretRef == nil {
				t.Errorf("RBD PV without a node-stage secret")
			}
		}
	}
}

func claimsOf(spec v1.PodSpec) []string {
	var out []string
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		}
		if v.RBD != nil || v.CephFS != nil || v.VsphereVolume != nil {
			out = append(out, "inline volume left: "+v.Name)
		}
	}
	return out
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && err != io.EOF {
		t.Fatalf("%v\n%s", err, b)
	}
}

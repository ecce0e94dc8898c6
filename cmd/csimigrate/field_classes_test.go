package main

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/cephfs"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
)

func hasCode(v plan.VolumePlan, code string) bool {
	return slices.ContainsFunc(v.Findings, func(f plugin.Finding) bool { return f.Code == code })
}

func classPlanned(t *testing.T, p *plan.Plan, name string) plan.StorageClassPlan {
	t.Helper()
	i := slices.IndexFunc(p.StorageClasses, func(s plan.StorageClassPlan) bool { return s.Name == name })
	if i < 0 {
		t.Fatalf("no class %s in %+v", name, p.StorageClasses)
	}
	return p.StorageClasses[i]
}

// The classes of false "ready" found on published manifests (issue 31),
// each on input shaped like its source (testdata/field), each judged by
// the one rule plan, translate and rewrite share.
func TestFieldClasses(t *testing.T) {
	t.Run("secrets: one rule for PVs and classes, CephFS node-stage secrets checked", func(t *testing.T) {
		p, _, code := planOf(t, "-f", "testdata/field/secrets.yaml")
		if code != cli.ExitBlocked || !p.Blocked {
			t.Fatalf("exit %d, blocked %v", code, p.Blocked)
		}
		// A non-admin user's key-only secret blocks the PV as it blocks the class.
		v := volume(t, p, "rbd-kube")
		if v.Migratable || !hasCode(v, plan.FindingSecretNotReady) || hasCode(v, rbd.FindingNonAdminUser) {
			t.Errorf("rbd-kube: %+v", v)
		}
		if c := classPlanned(t, p, "rbd-kube"); c.Migratable {
			t.Errorf("class rbd-kube: %+v", c)
		}
		if s := secretPlanned(p, "default", "ceph-secret-kube"); s == nil || s.Action != "add" || !slices.Equal(s.Fields, []string{"adminId=kube"}) {
			t.Errorf("secret ceph-secret-kube: %+v", s)
		}
		// The derived CephFS secret exists with "key" only: Ceph CSI's CephFS
		// driver reads userID and userKey.
		v = volume(t, p, "fs-keyonly")
		if v.Migratable || !hasCode(v, plan.FindingSecretNotReady) || hasCode(v, cephfs.FindingCSISecret) {
			t.Errorf("fs-keyonly: %+v", v)
		}
		if s := secretPlanned(p, "default", "ceph-secret-csi-admin"); s == nil || s.Action != "fix" || !slices.Equal(s.Fields, []string{"userID=admin", "userKey"}) || s.From != "default/ceph-secret" {
			t.Errorf("derived secret: %+v", s)
		}
		// The named node-stage secret has userID and userKey: ready.
		if v := volume(t, p, "fs-named"); !v.Migratable || len(v.Findings) > 0 {
			t.Errorf("fs-named: %+v", v)
		}
		// rewrite -apply refuses what the plan blocks for its secrets:
		// TestReadyPlanRewrites, on a live cluster.
	})
	t.Run("access modes the drivers refuse, and those a translation narrows", func(t *testing.T) {
		p, _, code := planOf(t, "-f", "testdata/field/access-modes.yaml")
		if code != cli.ExitBlocked {
			t.Fatalf("exit %d", code)
		}
		// Ceph CSI refuses ReadWriteMany on a file system, but the
		// translation asks for ReadWriteOnce, which the in-tree plugin
		// enforced too (one read-write mapping at a time): named, not
		// blocked (cephtest's oracle stages both forms).
		if v := volume(t, p, "rbd-rwx-fs"); !v.Migratable || !hasCode(v, plan.FindingAccessModesChanged) {
			t.Errorf("rbd-rwx-fs: %+v", v)
		}
		if v := volume(t, p, "vsphere-rwx"); v.Migratable || !hasCode(v, vsphere.FindingAccessModeRefused) {
			t.Errorf("vsphere-rwx: %+v", v)
		}
		// Ceph CSI serves ReadWriteMany raw block: kept, no change.
		if v := volume(t, p, "rbd-rwx-block"); !v.Migratable || hasCode(v, plan.FindingAccessModesChanged) {
			t.Errorf("rbd-rwx-block: %+v", v)
		}
		// ReadOnlyMany is dropped by the translation: named.
		if v := volume(t, p, "rbd-rwo-rox"); !v.Migratable || !hasCode(v, plan.FindingAccessModesChanged) {
			t.Errorf("rbd-rwo-rox: %+v", v)
		}
		out, stderr, code := runCmd(t, "", "translate", "-f", "testdata/field/access-modes.yaml")
		if code != cli.ExitBlocked || !strings.Contains(stderr, "PersistentVolume rbd-rwx-fs: access modes [ReadWriteMany] become [ReadWriteOnce]") ||
			!strings.Contains(stderr, "PersistentVolume vsphere-rwx: "+vsphere.FindingAccessModeRefused) ||
			!strings.Contains(stderr, "PersistentVolume rbd-rwo-rox: access modes [ReadWriteOnce ReadOnlyMany] become [ReadWriteOnce]") {
			t.Errorf("translate: exit %d\n%s", code, stderr)
		}
		pvs := decodePVs(t, out)
		if len(pvs) != 3 {
			t.Fatalf("translate printed %d PVs, want the three migratable ones", len(pvs))
		}
		for _, pv := range pvs {
			if pv.Name == "rbd-rwx-block" && !slices.Equal(pv.Spec.AccessModes, []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}) {
				t.Errorf("rbd-rwx-block printed with %v", pv.Spec.AccessModes)
			}
		}
	})
	t.Run("deletion handed only to a driver that deletes", func(t *testing.T) {
		p, _, _ := planOf(t, "-f", "testdata/field/ceph-provisioners.yaml")
		v := volume(t, p, "pvc-4f0e0c42-6c20-11e8-9f3a-525400b1e2c1")
		if !hasCode(v, cephfs.FindingNeverDeleted) || !hasCode(v, plan.FindingReclaimKept) || hasCode(v, plan.FindingRewriteRefuses) {
			t.Errorf("ceph.com/cephfs PV: %+v", v)
		}
		for _, f := range v.Findings {
			if f.Code == plan.FindingReclaimKept && (!strings.Contains(f.Message, "never deletes") || strings.Contains(f.Remedy, "StorageClass")) {
				t.Errorf("the reason or remedy for Retain is not the true one: %+v", f)
			}
		}
		// The RBD PV of ceph.com/rbd: its class's admin secret deletes it.
		if v := volume(t, p, "pvc-1b8e3f0a-6c1f-11e8-9f3a-525400b1e2c1"); !v.Migratable || hasCode(v, plan.FindingReclaimKept) {
			t.Errorf("ceph.com/rbd PV: %+v", v)
		}
	})
	t.Run("provisioners outside Kubernetes that write in-tree sources", func(t *testing.T) {
		p, _, _ := planOf(t, "-f", "testdata/field/ceph-provisioners.yaml")
		if c := classPlanned(t, p, "rbd"); !c.Migratable || c.From != "ceph.com/rbd" || c.To != rbd.DriverName || !strings.Contains(c.Reason, "ceph.com/rbd") {
			t.Errorf("ceph.com/rbd class: %+v", c)
		}
		if c := classPlanned(t, p, "cephfs"); c.Migratable || !strings.Contains(c.Reason, "fsName") || !strings.Contains(c.Reason, "clusterID: eb617825f3af80f3929694c0979b236e") {
			t.Errorf("ceph.com/cephfs class: %+v", c)
		}
		out, _, code := runCmd(t, "", "translate", "-f", "testdata/field/ceph-provisioners.yaml")
		if code != cli.ExitBlocked || !strings.Contains(out, "provisioner: rbd.csi.ceph.com") || !strings.Contains(out, "csi.storage.k8s.io/provisioner-secret-name: ceph-admin-secret") {
			t.Errorf("translate: exit %d\n%s", code, out)
		}
	})
	t.Run("old API versions read as their servers stored them", func(t *testing.T) {
		p, stderr, code := planOf(t, "-f", "testdata/field/old-apis.yaml")
		if code != cli.ExitBlocked || strings.Contains(stderr, "ignored") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if len(p.InlineVolumes) != 1 || p.InlineVolumes[0].Workload != "Deployment default/rbd-app" {
			t.Errorf("inline volumes %+v", p.InlineVolumes)
		}
		if c := classPlanned(t, p, "fast"); !c.Migratable {
			t.Errorf("storage.k8s.io/v1beta1 class: %+v", c)
		}
		if len(p.ClaimTemplates) != 1 || p.ClaimTemplates[0].StatefulSet != "default/db" {
			t.Errorf("claim templates %+v", p.ClaimTemplates)
		}
		out, stderr, _ := runCmd(t, "", "translate", "-f", "testdata/field/old-apis.yaml")
		var d appsv1.Deployment
		for _, doc := range strings.Split(out, "\n---\n") {
			if strings.Contains(doc, "kind: Deployment") {
				if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
					t.Fatal(err)
				}
			}
		}
		if d.APIVersion != "apps/v1" || d.Spec.Selector == nil || d.Spec.Selector.MatchLabels["app"] != "rbd-app" {
			t.Errorf("translated Deployment: %s %+v\n%s", d.APIVersion, d.Spec.Selector, stderr)
		}
		// A selector-less old Deployment whose template has no labels, and
		// an apiVersion csimigrate does not read: refused, the document named.
		for in, want := range map[string]string{
			"apiVersion: extensions/v1beta1\nkind: Deployment\nmetadata: {name: x}\nspec: {template: {spec: {containers: []}}}\n": "document 1: Deployment x: spec.selector: absent",
			"apiVersion: storage.k8s.io/v2\nkind: StorageClass\nmetadata: {name: v2class}\nprovisioner: kubernetes.io/rbd\n":      `document 1: StorageClass v2class: apiVersion "storage.k8s.io/v2"`,
		} {
			_, stderr, code := runCmd(t, in, "plan", "-f", "-")
			if code != cli.ExitInput || !strings.Contains(stderr, want) {
				t.Errorf("exit %d, stderr %q, want %q", code, stderr, want)
			}
		}
	})
	t.Run("messages: a Secret's data that is not base64 names the document and field, not the value", func(t *testing.T) {
		in := "apiVersion: v1\nkind: Secret\nmetadata: {name: ok, namespace: a}\ndata: {key: QQ==}\n---\n" +
			"apiVersion: v1\nkind: Secret\nmetadata: {name: bad, namespace: a}\ndata: {key: QQ==, userKey: 'AQB+s3cr3t!'}\n"
		_, stderr, code := runCmd(t, in, "plan", "-f", "-")
		if code != cli.ExitInput || !strings.Contains(stderr, `document 2: Secret a/bad: data["userKey"]: not base64`) || strings.Contains(stderr, "s3cr3t") {
			t.Errorf("exit %d: %s", code, stderr)
		}
	})
}

// decodePVs reads the PVs of translate's YAML output.
func decodePVs(t *testing.T, out string) []v1.PersistentVolume {
	t.Helper()
	var pvs []v1.PersistentVolume
	for _, doc := range strings.Split(out, "\n---\n") {
		if !strings.Contains(doc, "kind: PersistentVolume\n") {
			continue
		}
		var pv v1.PersistentVolume
		if err := yaml.Unmarshal([]byte(doc), &pv); err != nil {
			t.Fatal(err)
		}
		pvs = append(pvs, pv)
	}
	return pvs
}

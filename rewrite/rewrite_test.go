package rewrite_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/cephfs"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/translate"
)

var logger = klog.NewKlogr().V(10)

func translated(t *testing.T, pv *v1.PersistentVolume) *v1.PersistentVolume {
	t.Helper()
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	out, err := tr.TranslateInTreePVToCSI(logger, pv)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func rbdPV(user string, ref *v1.SecretReference) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PersistentVolumeSpec{
		AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		PersistentVolumeSource: v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{"10.0.0.1:6789"},
			RBDImage: "kubernetes-dynamic-pvc-1", RBDPool: "rbd", RadosUser: user, SecretRef: ref}}}}
}

func cephFSPV(annotations map[string]string) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "f", Annotations: annotations}, Spec: v1.PersistentVolumeSpec{
		PersistentVolumeSource: v1.PersistentVolumeSource{CephFS: &v1.CephFSPersistentVolumeSource{Monitors: []string{"10.0.0.1:6789"}, Path: "/a", User: "u",
			SecretRef: &v1.SecretReference{Name: "s", Namespace: "ns"}}}}}
}

func TestSecretNeeds(t *testing.T) {
	pv := rbdPV("kube", &v1.SecretReference{Name: "s", Namespace: "ns"})
	got := rewrite.SecretNeeds(pv, translated(t, pv))
	want := []rewrite.SecretNeed{{Namespace: "ns", Name: "s", Driver: secrets.CephRBDDriver, User: "kube",
		Uses: []string{string(secrets.NodeStage), string(secrets.ControllerExpand), string(secrets.NodeExpand)}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RBD (-want +got):\n%s", diff)
	}
	fs := cephFSPV(nil)
	got = rewrite.SecretNeeds(fs, translated(t, fs))
	if len(got) != 1 || got[0].From != "ns/s" || got[0].User != "u" || got[0].Driver != secrets.CephFSDriver || got[0].Name != secrets.CephFSCSISecretName("s", "u") {
		t.Errorf("CephFS, derived: %+v", got)
	}
	named := cephFSPV(map[string]string{cephfs.AnnNodeStageSecret: "other/csi"})
	got = rewrite.SecretNeeds(named, translated(t, named))
	if len(got) != 1 || got[0].From != "" || got[0].Key() != "other/csi" {
		t.Errorf("CephFS, named: %+v", got)
	}
	vs := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[ds] a.vmdk"}}}}
	if got := rewrite.SecretNeeds(vs, translated(t, vs)); got != nil {
		t.Errorf("vSphere: %+v", got)
	}
	if got := rewrite.SecretNeeds(nil, nil); got != nil {
		t.Errorf("nil: %+v", got)
	}
}

func TestJudge(t *testing.T) {
	need := rewrite.SecretNeed{Namespace: "ns", Name: "s", Driver: secrets.CephRBDDriver, User: "kube"}
	sec := func(kv ...string) *v1.Secret {
		s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{}}
		for i := 0; i+1 < len(kv); i += 2 {
			s.Data[kv[i]] = []byte(kv[i+1])
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		need    rewrite.SecretNeed
		secret  *v1.Secret
		action  string
		problem string
	}{
		{"missing", need, nil, "create", "does not exist"},
		{"key only, non-admin", need, sec("key", "K"), "add", "lacks adminId=kube"},
		{"key only, user unknown", rewrite.SecretNeed{Driver: secrets.CephRBDDriver, User: "kube", AnyUser: true}, sec("key", "K"), "", ""},
		{"ready", need, sec("key", "K", "adminId", "kube"), "", ""},
		{"no key", need, sec("password", "K"), "fix", `has no non-empty "key"`},
		{"cephfs key only", rewrite.SecretNeed{Driver: secrets.CephFSDriver, User: "u"}, sec("key", "K"), "fix", "lacks userID or userKey"},
	} {
		action, problem, _ := rewrite.Judge(tc.need, tc.secret)
		if action != tc.action || !strings.Contains(problem, tc.problem) || strings.Contains(problem, "K\"") {
			t.Errorf("%s: %q, %q; want %q, %q", tc.name, action, problem, tc.action, tc.problem)
		}
	}
	if p := rewrite.Problem(errors.New("other")); p != "other" {
		t.Errorf("Problem of another error: %q", p)
	}
}

func TestFields(t *testing.T) {
	for _, tc := range []struct {
		need   rewrite.SecretNeed
		action string
		want   []string
	}{
		{rewrite.SecretNeed{Driver: secrets.CephRBDDriver}, "create", []string{"key"}},
		{rewrite.SecretNeed{Driver: secrets.CephRBDDriver, User: "kube"}, "fix", []string{"key", "adminId=kube"}},
		{rewrite.SecretNeed{Driver: secrets.CephFSDriver}, "create", []string{"userID=admin", "userKey"}},
		{rewrite.SecretNeed{Driver: secrets.CephFSDriver, User: "u", From: "ns/s"}, "create", []string{"userID=u", "userKey"}},
	} {
		got, why := tc.need.Fields(tc.action)
		if diff := cmp.Diff(tc.want, got); diff != "" || why == "" {
			t.Errorf("%+v %s: (-want +got):\n%s%s", tc.need, tc.action, diff, why)
		}
	}
}

func TestKeepsRetain(t *testing.T) {
	for code, want := range map[string]bool{rbd.FindingHandleResolvesElsewhere: true, cephfs.FindingNeverDeleted: true, rbd.FindingNonAdminUser: false, "": false} {
		if why, ok := rewrite.KeepsRetain(code); ok != want || ok == (why == "") {
			t.Errorf("KeepsRetain(%q) = %q, %v; want %v", code, why, ok, want)
		}
	}
}

func TestAccessModes(t *testing.T) {
	block := v1.PersistentVolumeBlock
	in := rbdPV("", &v1.SecretReference{Name: "s", Namespace: "ns"})
	in.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}
	in.Spec.VolumeMode = &block
	out := translated(t, in)
	if rewrite.AccessModeChange(in, out) == "" {
		t.Fatalf("the translation keeps %v: nothing to test", out.Spec.AccessModes)
	}
	before := in.DeepCopy()
	rewrite.KeepServedModes(in, out)
	if diff := cmp.Diff([]v1.PersistentVolumeAccessMode{v1.ReadWriteMany}, out.Spec.AccessModes); diff != "" || out.Annotations[plugin.AnnAccessModes] != "" {
		t.Errorf("RWX block: modes (-want +got):\n%s annotations %v", diff, out.Annotations)
	}
	if change := rewrite.AccessModeChange(in, out); change != "" {
		t.Errorf("a change after KeepServedModes: %s", change)
	}
	if diff := cmp.Diff(before, in); diff != "" {
		t.Errorf("the in-tree PV was modified:\n%s", diff)
	}
	// A file system: narrowed and named, ReadWriteMany with the in-tree
	// plugin's own rule, ReadOnlyMany as what pods see.
	fs := rbdPV("", &v1.SecretReference{Name: "s", Namespace: "ns"})
	fs.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteMany, v1.ReadOnlyMany}
	fsOut := translated(t, fs)
	rewrite.KeepServedModes(fs, fsOut)
	change := rewrite.AccessModeChange(fs, fsOut)
	if !strings.Contains(change, "ReadWriteMany, ReadOnlyMany dropped") || !strings.Contains(change, "one node at a time") || !strings.Contains(change, "read-only") {
		t.Errorf("change %q", change)
	}
	if rewrite.AccessModeChange(nil, fsOut) != "" || rewrite.ServedAsTheyAre(nil) {
		t.Error("nil input")
	}
}

func TestInTreeClass(t *testing.T) {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Provisioner: "ceph.com/rbd", Parameters: map[string]string{"AdminID": "kube"}}
	before := sc.DeepCopy()
	in := rewrite.InTreeClass(sc)
	if in.Provisioner != plugin.RBDInTreePluginName || in.Name != "c" {
		t.Errorf("InTreeClass: %+v", in)
	}
	if diff := cmp.Diff(before, sc); diff != "" {
		t.Errorf("modified:\n%s", diff)
	}
	for _, p := range []string{"kubernetes.io/rbd", "example.com/x"} {
		other := &storagev1.StorageClass{Provisioner: p}
		if rewrite.InTreeClass(other) != other {
			t.Errorf("%s: not returned as it is", p)
		}
	}
	if rewrite.InTreeClass(nil) != nil || rewrite.ClassAdminID(nil) != "" {
		t.Error("nil class")
	}
	if got := rewrite.ClassAdminID(sc); got != "kube" {
		t.Errorf("ClassAdminID = %q, want the case-insensitive key's kube", got)
	}
}

// Over valid and hostile PVs: no rule panics or modifies its input, and
// every secret a translation names is among the needs.
func TestRulesProperty(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		pv := rapid.OneOf(
			rapid.Custom(gen.RBDPV),
			rapid.Custom(func(t *rapid.T) *v1.PersistentVolume { return gen.CephFSPV(t, true) }),
			rapid.Custom(gen.VSpherePV),
			rapid.Custom(gen.HostilePV),
		).Draw(rt, "pv")
		before := pv.DeepCopy()
		out, err := tr.TranslateInTreePVToCSI(logger, pv)
		if err != nil {
			out = nil
		}
		needs := rewrite.SecretNeeds(pv, out)
		_ = rewrite.AccessModeChange(pv, out)
		_ = rewrite.ServedAsTheyAre(pv)
		if out != nil {
			rewrite.KeepServedModes(pv, out.DeepCopy())
			driver, _ := rewrite.Driver(pv)
			for _, ref := range []*v1.SecretReference{out.Spec.CSI.NodeStageSecretRef, out.Spec.CSI.ControllerExpandSecretRef} {
				if driver == "" || ref == nil || ref.Name == "" {
					continue
				}
				found := false
				for _, n := range needs {
					found = found || n.Namespace == ref.Namespace && n.Name == ref.Name
				}
				if !found {
					rt.Fatalf("secret %s/%s of the translation is not among the needs %+v", ref.Namespace, ref.Name, needs)
				}
			}
		}
		for _, n := range needs {
			if len(n.Uses) == 0 || n.Driver == "" {
				rt.Fatalf("need without use or driver: %+v", n)
			}
		}
		if diff := cmp.Diff(before, pv); diff != "" {
			rt.Fatalf("input modified:\n%s", diff)
		}
	})
}

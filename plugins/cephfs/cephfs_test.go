package cephfs_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storage "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/internal/testsupport/plugintest"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/plugins/cephfs"
	"github.com/csimigrate/csimigrate/volumeid"
)

var logger = klog.Background().V(100)

func pv() *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "shared"},
		Spec: v1.PersistentVolumeSpec{
			AccessModes:  []v1.PersistentVolumeAccessMode{v1.ReadWriteMany},
			MountOptions: []string{"noatime,mds_namespace=myfs"},
			ClaimRef:     &v1.ObjectReference{Namespace: "app", Name: "shared"},
			PersistentVolumeSource: v1.PersistentVolumeSource{CephFS: &v1.CephFSPersistentVolumeSource{
				Monitors:  []string{"10.70.53.126:6789"},
				Path:      "volumes/shared",
				User:      "kube",
				SecretRef: &v1.SecretReference{Name: "ceph-secret"},
				ReadOnly:  true,
			}},
		},
	}
}

func TestForward(t *testing.T) {
	in := pv()
	out, err := cephfs.New(cephfs.Options{}).TranslateInTreePVToCSI(logger, in)
	if err != nil {
		t.Fatal(err)
	}
	want := &v1.CSIPersistentVolumeSource{
		Driver:       cephfs.DriverName,
		VolumeHandle: volumeid.NewCephFSHandle([]string{"10.70.53.126:6789"}, "myfs", "/volumes/shared").String(),
		ReadOnly:     true,
		VolumeAttributes: map[string]string{
			"staticVolume": "true", "clusterID": "b7f67366bb43f32e07d8a261a7840da9", "rootPath": "/volumes/shared", "fsName": "myfs",
		},
		NodeStageSecretRef: &v1.SecretReference{Namespace: "app", Name: "ceph-secret-csi-kube"},
	}
	if diff := cmp.Diff(want, out.Spec.CSI); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"noatime"}, out.Spec.MountOptions); diff != "" {
		t.Errorf("mount options (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(in.Spec.AccessModes, out.Spec.AccessModes); diff != "" {
		t.Errorf("access modes changed:\n%s", diff)
	}
}

func TestRootPathDefaulting(t *testing.T) {
	for in, want := range map[string]string{"": "/", "/": "/", "a/b": "/a/b", "/a_b c/ü": "/a_b c/ü"} {
		if got := cephfs.RootPath(in); got != want {
			t.Errorf("RootPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNoEmptyOptionalAttributes(t *testing.T) {
	in := pv()
	in.Spec.MountOptions = []string{"fs="}
	out, err := cephfs.New(cephfs.Options{}).TranslateInTreePVToCSI(logger, in)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Spec.CSI.VolumeAttributes["fsName"]; ok {
		t.Error("an empty fsName must be left out: Ceph CSI rejects empty optional attributes")
	}
}

func TestSecretFileOnly(t *testing.T) {
	in := pv()
	in.Spec.CephFS.SecretRef = nil
	in.Spec.CephFS.SecretFile = "/etc/ceph/kube.secret"
	p := cephfs.New(cephfs.Options{})
	_, err := p.TranslateInTreePVToCSI(logger, in)
	if !errors.Is(err, cephfs.ErrSecretFileOnly) || !errors.Is(err, plugin.ErrMissingInformation) {
		t.Fatalf("err = %v", err)
	}
	f := p.CheckPV(in)
	if len(f) != 1 || f[0].Code != cephfs.FindingSecretFileOnly || f[0].Severity != plugin.SeverityBlocker {
		t.Errorf("findings %+v", f)
	}
	// The remedy: an administrator names a CSI secret.
	in.Annotations = map[string]string{cephfs.AnnNodeStageSecret: "app/cephfs-kube"}
	out, err := p.TranslateInTreePVToCSI(logger, in)
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Spec.CSI.NodeStageSecretRef; r.Namespace != "app" || r.Name != "cephfs-kube" {
		t.Errorf("ref %v", r)
	}
	if len(p.CheckPV(in)) != 0 {
		t.Errorf("findings after the remedy: %+v", p.CheckPV(in))
	}
}

func TestStorageClassUnsupported(t *testing.T) {
	_, err := cephfs.New(cephfs.Options{}).TranslateInTreeStorageClassToCSI(logger, &storage.StorageClass{})
	var ue *plugin.UnsupportedError
	if !errors.Is(err, plugin.ErrUnsupported) || !errors.As(err, &ue) {
		t.Errorf("err = %v", err)
	}
}

func TestReverseNative(t *testing.T) {
	// A static CephFS volume written for Ceph CSI by hand.
	csi := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "static"}, Spec: v1.PersistentVolumeSpec{
		AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteMany},
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
			Driver: cephfs.DriverName, VolumeHandle: "static-1",
			VolumeAttributes:   map[string]string{"staticVolume": "true", "clusterID": "c1", "rootPath": "/x", "fsName": "fs2"},
			NodeStageSecretRef: &v1.SecretReference{Namespace: "ns", Name: "csi"},
		}},
	}}
	p := cephfs.New(cephfs.Options{})
	if _, err := p.TranslateCSIPVToInTree(csi); !errors.Is(err, plugin.ErrMissingInformation) {
		t.Fatalf("err = %v", err)
	}
	cfg := ceph.NewClusterConfig(ceph.ClusterEntry{ClusterID: "c1", Monitors: []string{"m:6789"}})
	p = cephfs.New(cephfs.Options{ClusterConfig: cfg})
	back, err := p.TranslateCSIPVToInTree(csi)
	if err != nil {
		t.Fatal(err)
	}
	want := &v1.CephFSPersistentVolumeSource{Monitors: []string{"m:6789"}, Path: "/x", SecretRef: &v1.SecretReference{Namespace: "ns", Name: "csi"}}
	if diff := cmp.Diff(want, back.Spec.CephFS); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"mds_namespace=fs2"}, back.Spec.MountOptions); diff != "" {
		t.Errorf("mount options (-want +got):\n%s", diff)
	}
	again, err := p.TranslateInTreePVToCSI(logger, back)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(csi.Spec.CSI, again.Spec.CSI); diff != "" {
		t.Errorf("CSI -> in-tree -> CSI (-want +got):\n%s", diff)
	}
}

func TestInline(t *testing.T) {
	vol := &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{CephFS: &v1.CephFSVolumeSource{
		Monitors: []string{"m:6789"}, SecretRef: &v1.LocalObjectReference{Name: "s"}}}}
	out, err := cephfs.New(cephfs.Options{}).TranslateInTreeInlineVolumeToCSI(logger, vol, "pods")
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Spec.CSI.NodeStageSecretRef; r.Namespace != "pods" || r.Name != "s-csi-admin" {
		t.Errorf("ref %v", r)
	}
	if out.Spec.CSI.VolumeAttributes["rootPath"] != "/" {
		t.Errorf("attributes %v", out.Spec.CSI.VolumeAttributes)
	}
}

// Distinct volumes never share a handle.
func TestHandlesUniqueProperty(t *testing.T) {
	p := cephfs.New(cephfs.Options{})
	rapid.Check(t, func(t *rapid.T) {
		a, b := gen.CephFSPV(t, false), gen.CephFSPV(t, false)
		ca, err := p.TranslateInTreePVToCSI(logger, a)
		if err != nil {
			t.Fatal(err)
		}
		cb, err := p.TranslateInTreePVToCSI(logger, b)
		if err != nil {
			t.Fatal(err)
		}
		same := ca.Spec.CSI.VolumeAttributes["clusterID"] == cb.Spec.CSI.VolumeAttributes["clusterID"] &&
			ca.Spec.CSI.VolumeAttributes["rootPath"] == cb.Spec.CSI.VolumeAttributes["rootPath"] &&
			ca.Spec.CSI.VolumeAttributes["fsName"] == cb.Spec.CSI.VolumeAttributes["fsName"]
		if !same && ca.Spec.CSI.VolumeHandle == cb.Spec.CSI.VolumeHandle {
			t.Fatalf("distinct volumes share handle %s", ca.Spec.CSI.VolumeHandle)
		}
		if len(ca.Spec.CSI.VolumeHandle) > 128 {
			t.Fatalf("handle too long")
		}
	})
}

func TestRoundTripProperty(t *testing.T) {
	plugintest.RoundTrip(t, cephfs.New(cephfs.Options{}), func(t *rapid.T) *v1.PersistentVolume { return gen.CephFSPV(t, false) })
}

func TestHostileProperty(t *testing.T) {
	plugintest.Hostile(t, cephfs.New(cephfs.Options{}))
}

// referenceFSName is the plain definition: split every entry, drop the
// file-system options (the last one names the file system), join the rest.
func referenceFSName(opts []string) (fsName string, rest []string, found bool) {
	for _, entry := range opts {
		var kept []string
		for _, o := range strings.Split(entry, ",") {
			if v, ok := strings.CutPrefix(o, "mds_namespace="); ok {
				fsName, found = v, true
			} else if v, ok := strings.CutPrefix(o, "fs="); ok {
				fsName, found = v, true
			} else {
				kept = append(kept, o)
			}
		}
		if len(kept) > 0 {
			rest = append(rest, strings.Join(kept, ","))
		}
	}
	return fsName, rest, found
}

func TestFSNameFromMountOptions(t *testing.T) {
	part := rapid.SampledFrom([]string{"", "noatime", "mds_namespace=a", "fs=b", "fs=", "ro", "mds_namespace="})
	entry := rapid.Custom(func(t *rapid.T) string {
		return strings.Join(rapid.SliceOfN(part, 1, 4).Draw(t, "parts"), ",")
	})
	rapid.Check(t, func(t *rapid.T) {
		opts := rapid.SliceOfN(entry, 0, 3).Draw(t, "opts")
		fs, rest, found := cephfs.FSNameFromMountOptions(opts)
		wfs, wrest, wfound := referenceFSName(opts)
		if fs != wfs || found != wfound || !slices.Equal(rest, wrest) {
			t.Fatalf("got %q %q %v, want %q %q %v", fs, rest, found, wfs, wrest, wfound)
		}
	})
}

// Ceph CSI never deletes a static volume: a CephFS PV whose policy asks
// for deletion gets a finding that says so, and who deleted it before.
func TestCheckPVNeverDeleted(t *testing.T) {
	for _, tc := range []struct {
		policy v1.PersistentVolumeReclaimPolicy
		by     string
		want   bool
	}{
		{v1.PersistentVolumeReclaimRetain, "", false},
		{"", "", false},
		{v1.PersistentVolumeReclaimDelete, "", true},
		{v1.PersistentVolumeReclaimRecycle, "", true},
		{v1.PersistentVolumeReclaimDelete, "ceph.com/cephfs", true},
	} {
		in := pv()
		in.Spec.PersistentVolumeReclaimPolicy = tc.policy
		if tc.by != "" {
			in.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": tc.by}
		}
		var got []plugin.Finding
		for _, f := range cephfs.New(cephfs.Options{}).CheckPV(in) {
			if f.Code == cephfs.FindingNeverDeleted {
				got = append(got, f)
			}
		}
		if (len(got) == 1) != tc.want || len(got) > 1 {
			t.Errorf("%q by %q: findings %+v, want one: %v", tc.policy, tc.by, got, tc.want)
			continue
		}
		if tc.want && (got[0].Severity != plugin.SeverityWarning || !strings.Contains(got[0].Message, "never deletes")) {
			t.Errorf("finding %+v", got[0])
		}
		if tc.by != "" && (!strings.Contains(got[0].Message, tc.by) || !strings.Contains(got[0].Remedy, "ceph auth del")) {
			t.Errorf("finding of a %s volume does not name what it deleted: %+v", tc.by, got[0])
		}
	}
}

// A PV whose rewrite is under way has Retain and records the policy to
// restore: CheckPV judges that one, so the rewrite's replacement (built
// after its first step) keeps Retain as the plan said.
func TestCheckPVUnderWayKeepsNeverDeleted(t *testing.T) {
	p := cephfs.New(cephfs.Options{})
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "x", Annotations: map[string]string{plugin.AnnOriginalReclaimPolicy: "Delete"}},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: v1.PersistentVolumeSource{CephFS: &v1.CephFSPersistentVolumeSource{Monitors: []string{"1.2.3.4:6789"}, Path: "/a",
				SecretRef: &v1.SecretReference{Name: "s", Namespace: "ns"}}}}}
	var codes []string
	for _, f := range p.CheckPV(pv) {
		codes = append(codes, f.Code)
	}
	if !slices.Contains(codes, cephfs.FindingNeverDeleted) {
		t.Errorf("findings %v, want %s for the recorded Delete", codes, cephfs.FindingNeverDeleted)
	}
	delete(pv.Annotations, plugin.AnnOriginalReclaimPolicy)
	for _, f := range p.CheckPV(pv) {
		if f.Code == cephfs.FindingNeverDeleted {
			t.Errorf("a Retain PV with no recorded policy: %v", f)
		}
	}
}

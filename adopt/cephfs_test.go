package adopt_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/translate"
	"github.com/csimigrate/csimigrate/volumeid"
)

// staticCephFS is the translation of an in-tree CephFS PV of path.
func staticCephFS(t testing.TB, path string) *v1.PersistentVolume {
	t.Helper()
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	in := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1", Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "ceph.com/cephfs"}},
		Spec: v1.PersistentVolumeSpec{Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}, MountOptions: []string{"mds_namespace=myfs"},
			PersistentVolumeSource: v1.PersistentVolumeSource{CephFS: &v1.CephFSPersistentVolumeSource{Monitors: []string{"10.0.0.1:6789"},
				Path: path, User: "kube", SecretRef: &v1.SecretReference{Name: "s", Namespace: "ns"}}}}}
	out, err := tr.TranslateInTreePVToCSI(klog.Background().V(100), in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSubvolumeOf(t *testing.T) {
	for path, want := range map[string]string{
		"/volumes/kubernetes/kubernetes-dynamic-pvc-" + uuid: "kubernetes/kubernetes-dynamic-pvc-" + uuid,
		"/volumes/_nogroup/a":                                "_nogroup/a",
		"/volumes/csi/a":                                     "csi/a",
		"/volumes/kubernetes/k/pvc1":                         "", // the old external provisioner's layout: one level deeper
		"/volumes/_legacy/a":                                 "",
		"/volumes/_deleting/a":                               "",
		"/volumes/g/.snap":                                   "",
		"/volumes/g/_index":                                  "",
		"/volumes/g/":                                        "",
		"/volumes/a":                                         "",
		"/shared/a/b":                                        "",
		"volumes/g/a":                                        "",
		"":                                                   "",
	} {
		g, n, ok := adopt.SubvolumeOf(path)
		got := ""
		if ok {
			got = g + "/" + n
		}
		if got != want {
			t.Errorf("SubvolumeOf(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestCephFS(t *testing.T) {
	name := "kubernetes-dynamic-pvc-" + uuid
	sub := &adopt.Subvolume{FS: "myfs", FSCID: 3, MetadataPool: "cephfs.myfs.meta", Group: "kubernetes", Name: name,
		Path: "/volumes/kubernetes/" + name, Features: []string{"snapshot-clone", "snapshot-autoprotect"}}
	reports := *sub
	reports.Name, reports.Path = "reports", "/volumes/kubernetes/reports"
	noClone := *sub
	noClone.Features = nil
	elsewhere := *sub
	elsewhere.Path = "/volumes/kubernetes/other"
	secret := &v1.SecretReference{Namespace: "ceph-csi", Name: "csi-cephfs-secret"}
	all := []adopt.Feature{adopt.FeatureStage, adopt.FeatureExpand, adopt.FeatureDelete, adopt.FeatureSnapshot, adopt.FeatureClone}
	for _, tc := range []struct {
		name      string
		path      string
		in        adopt.CephFSInput
		form      adopt.Form
		features  []adopt.Feature
		keep      bool
		why       string
		predicted bool
		handMade  bool
	}{
		{name: "a PV no provisioner made", path: sub.Path, in: adopt.CephFSInput{Subvolume: sub, ClusterID: "c-kubernetes", Secret: secret}, form: adopt.FormNative, features: all, keep: true, handMade: true},
		{name: "subvolume", path: sub.Path, in: adopt.CephFSInput{Subvolume: sub, ClusterID: "c-kubernetes", Secret: secret}, form: adopt.FormNative, features: all},
		{name: "no snapshot-clone", path: sub.Path, in: adopt.CephFSInput{Subvolume: &noClone, ClusterID: "c-kubernetes", Secret: secret}, form: adopt.FormNative, features: all[:3], why: "snapshot-clone"},
		{name: "no uuid in the name", path: reports.Path, in: adopt.CephFSInput{Subvolume: &reports, ClusterID: "c-kubernetes", Secret: secret, UUID: uuid}, form: adopt.FormNative, features: all, keep: true},
		{name: "made by hand", path: sub.Path, in: adopt.CephFSInput{NotSubvolume: "Error ENODATA: error in getxattr", ClusterID: "c-kubernetes", Secret: secret}, form: adopt.FormStatic, features: all[:1], why: "setfattr"},
		{name: "placed elsewhere", path: sub.Path, in: adopt.CephFSInput{Subvolume: &elsewhere, ClusterID: "c-kubernetes", Secret: secret}, form: adopt.FormStatic, features: all[:1], why: "places subvolume"},
		{name: "not under /volumes", path: "/shared/data", in: adopt.CephFSInput{Subvolume: sub, ClusterID: "c-kubernetes", Secret: secret}, form: adopt.FormStatic, features: all[:1], why: "is not /volumes/<group>/<name>"},
		{name: "no cluster entry for the group", path: sub.Path, in: adopt.CephFSInput{Subvolume: sub, Secret: secret}, form: adopt.FormStatic, features: all[:1], why: `cephFS.subvolumeGroup "kubernetes"`},
		{name: "no admin secret", path: sub.Path, in: adopt.CephFSInput{Subvolume: sub, ClusterID: "c-kubernetes"}, form: adopt.FormStatic, features: all[:1], why: "adminID and adminKey"},
		{name: "shared path", path: sub.Path, in: adopt.CephFSInput{Subvolume: sub, ClusterID: "c-kubernetes", Secret: secret, ReferencedBy: []string{"pv2"}}, form: adopt.FormStatic, features: all[:1], why: "pv2"},
		{name: "predicted", path: sub.Path, in: adopt.CephFSInput{ClusterID: "c-kubernetes", Secret: secret}, form: adopt.FormNative, features: all, why: "not known without reading Ceph", predicted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.PV = staticCephFS(t, tc.path)
			if tc.handMade {
				delete(tc.in.PV.Annotations, "pv.kubernetes.io/provisioned-by")
			}
			before := tc.in.PV.DeepCopy()
			d, err := adopt.CephFS(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if d.Form != tc.form || !cmp.Equal(d.Features, tc.features) || (d.KeepRetain != "") != tc.keep || d.Predicted != tc.predicted {
				t.Errorf("got %s %v keep %q predicted %t; want %s %v keep %t", d.Form, d.Features, d.KeepRetain, d.Predicted, tc.form, tc.features, tc.keep)
			}
			if tc.why != "" && !strings.Contains(strings.Join(d.Why, "\n"), tc.why) {
				t.Errorf("why %q, want it to say %q", d.Why, tc.why)
			}
			if diff := cmp.Diff(before, tc.in.PV); diff != "" {
				t.Errorf("the input was modified:\n%s", diff)
			}
			if d.Form != adopt.FormNative || d.Predicted {
				if d.PV != nil {
					t.Error("an adopted PV for a volume that is not adopted")
				}
				return
			}
			id, err := volumeid.ParseCephCSIVolumeID(d.PV.Spec.CSI.VolumeHandle)
			if err != nil || id.Location != 3 || id.ClusterID != "c-kubernetes" || id.ObjectUUID != uuid {
				t.Errorf("volume ID %q (%+v, %v)", d.PV.Spec.CSI.VolumeHandle, id, err)
			}
			src := d.PV.Spec.CSI
			want := map[string]string{"clusterID": "c-kubernetes", "fsName": "myfs", "subvolumeName": tc.in.Subvolume.Name, "subvolumePath": tc.in.Subvolume.Path}
			if diff := cmp.Diff(want, src.VolumeAttributes); diff != "" {
				t.Errorf("attributes:\n%s", diff)
			}
			if *src.NodeStageSecretRef != *secret || *src.ControllerExpandSecretRef != *secret ||
				d.PV.Annotations["volume.kubernetes.io/provisioner-deletion-secret-name"] != secret.Name ||
				d.PV.Annotations["pv.kubernetes.io/provisioned-by"] != "cephfs.csi.ceph.com" {
				t.Errorf("secrets %v %v, annotations %v", src.NodeStageSecretRef, src.ControllerExpandSecretRef, d.PV.Annotations)
			}
			back, j, ok, err := adopt.Unadopted(d.PV)
			if err != nil || !ok || j != d.Journal {
				t.Fatalf("Unadopted: %v %t %+v", err, ok, j)
			}
			if diff := cmp.Diff(tc.in.PV, back); diff != "" {
				t.Errorf("Unadopted does not give the PV back:\n%s", diff)
			}
			// Ceph CSI's CephFS journal: no image id.
			wantOps := []string{"create csi.volume." + uuid, "setomapval csi.volume." + uuid + " csi.imagename " + tc.in.Subvolume.Name,
				"setomapval csi.volume." + uuid + " csi.volname pv1", "setomapval csi.volumes.default csi.volume.pv1 " + uuid}
			var got []string
			for _, op := range d.Journal.Writes() {
				got = append(got, strings.Join(op.Args(), " "))
			}
			if diff := cmp.Diff(wantOps, got); diff != "" {
				t.Errorf("journal writes:\n%s", diff)
			}
			if d.Journal.Pool != "cephfs.myfs.meta" || d.Journal.Namespace != adopt.JournalNamespaceCephFS {
				t.Errorf("journal in %s namespace %q, want cephfs.myfs.meta, csi", d.Journal.Pool, d.Journal.Namespace)
			}
		})
	}
	if _, err := adopt.CephFS(adopt.CephFSInput{PV: migrated(t, "image", "")}); !errors.Is(err, adopt.ErrNotAdoptable) {
		t.Errorf("an RBD PV: %v", err)
	}
	if _, err := adopt.CephFS(adopt.CephFSInput{PV: staticCephFS(t, reports.Path), Subvolume: &reports, ClusterID: "c", Secret: secret}); err == nil {
		t.Error("a subvolume without a UUID suffix and no UUID given: no error")
	}
}

// Over generated and hostile PVs: no panic, no input modified; a native
// adoption's PV gives the input back through Unadopted.
func TestCephFSProperty(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		var pv *v1.PersistentVolume
		if rapid.Bool().Draw(rt, "hostile") {
			pv = gen.HostilePV(rt)
		} else {
			in := gen.CephFSPV(rt, false)
			if rapid.Bool().Draw(rt, "subvolumePath") {
				in.Spec.CephFS.Path = "/volumes/" + rapid.SampledFrom([]string{"kubernetes", "csi", "_nogroup"}).Draw(rt, "group") + "/" +
					rapid.SampledFrom([]string{"kubernetes-dynamic-pvc-" + uuid, "reports", "a b"}).Draw(rt, "name")
			}
			if pv, err = tr.TranslateInTreePVToCSI(klog.Background().V(100), in); err != nil {
				pv = in
			}
		}
		in := adopt.CephFSInput{PV: pv, UUID: uuid, ClusterID: rapid.SampledFrom([]string{"", "c"}).Draw(rt, "clusterID")}
		if rapid.Bool().Draw(rt, "secret") {
			in.Secret = &v1.SecretReference{Namespace: "ns", Name: "s"}
		}
		if pv.Spec.CSI != nil && rapid.Bool().Draw(rt, "read") {
			if g, n, ok := adopt.SubvolumeOf(pv.Spec.CSI.VolumeAttributes["rootPath"]); ok {
				in.Subvolume = &adopt.Subvolume{FS: "fs", FSCID: rapid.Int64Range(0, 1<<40).Draw(rt, "fscid"), MetadataPool: "meta", Group: g, Name: n,
					Path: pv.Spec.CSI.VolumeAttributes["rootPath"], Features: []string{"snapshot-clone"}}
			}
		}
		before := pv.DeepCopy()
		d, err := adopt.CephFS(in)
		if diff := cmp.Diff(before, pv); diff != "" {
			rt.Fatalf("input modified:\n%s", diff)
		}
		// The form alone, as a plan decides it without the run's uuid and
		// Secret, is the run's form with the Secret given, with nothing
		// built.
		fin := in
		fin.FormOnly, fin.UUID, fin.Secret = true, "", nil
		f, ferr := adopt.CephFS(fin)
		withSecret := in
		withSecret.Secret = &v1.SecretReference{Namespace: "ns", Name: "s"}
		ds, serr := adopt.CephFS(withSecret)
		if (ferr == nil) != (serr == nil) {
			rt.Fatalf("FormOnly: %v, the run with the Secret: %v", ferr, serr)
		}
		if serr == nil && (f.PV != nil || f.Journal != (adopt.Journal{}) || f.Form != ds.Form || !slices.Equal(f.Features, ds.Features) || !slices.Equal(f.Why, ds.Why)) {
			rt.Fatalf("FormOnly decided %+v, the run with the Secret %+v", f, ds)
		}
		if err != nil || d.PV == nil {
			return
		}
		back, _, ok, err := adopt.Unadopted(d.PV)
		if err != nil || !ok {
			rt.Fatalf("Unadopted: %v %t", err, ok)
		}
		if diff := cmp.Diff(pv, back); diff != "" {
			rt.Fatalf("Unadopted does not give the PV back:\n%s", diff)
		}
	})
}

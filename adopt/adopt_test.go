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

const uuid = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"

func migrated(t testing.TB, image, features string) *v1.PersistentVolume {
	t.Helper()
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	in := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1", Annotations: map[string]string{}},
		Spec: v1.PersistentVolumeSpec{Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeSource: v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{"10.0.0.1:6789"},
				RBDImage: image, RBDPool: "kube", RadosUser: "kube", SecretRef: &v1.SecretReference{Name: "s", Namespace: "ns"}}}}}
	if features != "" {
		in.Annotations["rbd.csimigrate.io/image-features"] = features
	}
	out, err := tr.TranslateInTreePVToCSI(klog.Background().V(100), in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRBD(t *testing.T) {
	layered := &adopt.Image{Pool: "kube", PoolID: 7, Name: "kubernetes-dynamic-pvc-" + uuid, ID: "10226b8b4567", Format: 2, Features: []string{"layering"}}
	bare := *layered
	bare.Features = nil
	old := *layered
	old.Format, old.ID = 1, ""
	static := *layered
	static.Name = "static-image"
	all := []adopt.Feature{adopt.FeatureStage, adopt.FeatureExpand, adopt.FeatureDelete, adopt.FeatureSnapshot, adopt.FeatureClone}
	basic := all[:3]
	for _, tc := range []struct {
		name      string
		image     string
		in        adopt.RBDInput
		form      adopt.Form
		features  []adopt.Feature
		keep      bool
		why       string
		predicted bool
	}{
		{name: "layering", image: layered.Name, in: adopt.RBDInput{Image: layered}, form: adopt.FormNative, features: all},
		{name: "no layering", image: layered.Name, in: adopt.RBDInput{Image: &bare}, form: adopt.FormNative, features: basic, why: "lacks the layering feature"},
		{name: "format 1", image: layered.Name, in: adopt.RBDInput{Image: &old}, form: adopt.FormMigration, features: basic, why: "format 1"},
		{name: "rados namespace", image: layered.Name, in: adopt.RBDInput{Image: layered, RadosNamespace: "ns"}, form: adopt.FormMigration, features: basic, why: "rados namespace"},
		{name: "shared image", image: layered.Name, in: adopt.RBDInput{Image: layered, ReferencedBy: []string{"pv2"}}, form: adopt.FormMigration, features: basic, why: "pv2"},
		{name: "no uuid in the name", image: "static-image", in: adopt.RBDInput{Image: &static, UUID: uuid}, form: adopt.FormNative, features: all, keep: true},
		{name: "predicted: the in-tree default", image: layered.Name, in: adopt.RBDInput{ClassFeatures: ptr("")}, form: adopt.FormNative, features: basic, why: "lack layering", predicted: true},
		{name: "predicted: layering", image: layered.Name, in: adopt.RBDInput{ClassFeatures: ptr("layering")}, form: adopt.FormNative, features: all, predicted: true},
		{name: "predicted: unknown", image: layered.Name, in: adopt.RBDInput{}, form: adopt.FormNative, features: basic, why: "not known", predicted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.PV = migrated(t, tc.image, "")
			before := tc.in.PV.DeepCopy()
			d, err := adopt.RBD(tc.in)
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
			if err != nil || id.Location != 7 || id.ClusterID != tc.in.PV.Spec.CSI.VolumeAttributes["clusterID"] || id.ObjectUUID != uuid {
				t.Errorf("volume ID %q (%+v, %v)", d.PV.Spec.CSI.VolumeHandle, id, err)
			}
			for _, k := range []string{"migration", "staticVolume"} {
				if _, ok := d.PV.Spec.CSI.VolumeAttributes[k]; ok {
					t.Errorf("the adopted PV keeps attribute %s", k)
				}
			}
			back, j, ok, err := adopt.Unadopted(d.PV)
			if err != nil || !ok || j != d.Journal {
				t.Fatalf("Unadopted: %v %t %+v", err, ok, j)
			}
			if diff := cmp.Diff(tc.in.PV, back); diff != "" {
				t.Errorf("Unadopted does not give the PV back:\n%s", diff)
			}
			if jo, ok, err := adopt.JournalOf(d.PV); err != nil || !ok || jo != d.Journal {
				t.Errorf("JournalOf the adopted PV: %+v %t %v, want %+v", jo, ok, err, d.Journal)
			}
			if _, ok, err := adopt.JournalOf(tc.in.PV); ok || err != nil {
				t.Errorf("JournalOf the PV before the adoption: %t %v", ok, err)
			}
			want := []string{"create csi.volume." + uuid, "setomapval csi.volume." + uuid + " csi.imageid 10226b8b4567",
				"setomapval csi.volume." + uuid + " csi.imagename " + tc.image, "setomapval csi.volume." + uuid + " csi.volname pv1",
				"setomapval csi.volumes.default csi.volume.pv1 " + uuid}
			var got []string
			for _, op := range d.Journal.Writes() {
				got = append(got, strings.Join(op.Args(), " "))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("journal writes:\n%s", diff)
			}
			if why := d.Journal.Matches(d.Journal.Keys(), map[string]string{d.Journal.DirectoryKey(): uuid}); why != "" {
				t.Errorf("the entry does not match itself: %s", why)
			}
			if why := d.Journal.Matches(map[string]string{"csi.imagename": "other"}, nil); why == "" {
				t.Error("another entry matches")
			}
		})
	}
	if _, err := adopt.RBD(adopt.RBDInput{}); !errors.Is(err, adopt.ErrNotAdoptable) {
		t.Errorf("no PV: %v", err)
	}
	if _, err := adopt.RBD(adopt.RBDInput{PV: migrated(t, "static-image", ""), Image: &static}); err == nil {
		t.Error("an image without a UUID suffix and no UUID given: no error")
	}
}

// Over generated and hostile PVs: no panic, no input modified; a native
// adoption's PV gives the input back through Unadopted.
func TestRBDProperty(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		var pv *v1.PersistentVolume
		if rapid.Bool().Draw(rt, "hostile") {
			pv = gen.HostilePV(rt)
		} else if in := gen.RBDPV(rt); true {
			if pv, err = tr.TranslateInTreePVToCSI(klog.Background().V(100), in); err != nil {
				pv = in
			}
		}
		var im *adopt.Image
		if rapid.Bool().Draw(rt, "read") && pv.Spec.CSI != nil {
			a := pv.Spec.CSI.VolumeAttributes
			pool := a["pool"]
			if pool == "" {
				pool = "rbd"
			}
			im = &adopt.Image{Pool: pool, PoolID: rapid.Int64Range(0, 1<<40).Draw(rt, "poolID"), Name: a["imageName"], ID: rapid.StringMatching(`[0-9a-f]{0,12}`).Draw(rt, "id"),
				Format: rapid.IntRange(1, 2).Draw(rt, "format"), Features: rapid.SliceOfDistinct(rapid.SampledFrom([]string{"layering", "exclusive-lock", "deep-flatten"}), rapid.ID[string]).Draw(rt, "features")}
		}
		before := pv.DeepCopy()
		d, err := adopt.RBD(adopt.RBDInput{PV: pv, Image: im, UUID: uuid})
		if diff := cmp.Diff(before, pv); diff != "" {
			rt.Fatalf("input modified:\n%s", diff)
		}
		// The form alone, as a plan decides it without the run's uuid, is
		// the run's form, with nothing built.
		f, ferr := adopt.RBD(adopt.RBDInput{PV: pv, Image: im, FormOnly: true})
		if (ferr == nil) != (err == nil) {
			rt.Fatalf("FormOnly: %v, the run: %v", ferr, err)
		}
		if err == nil && (f.PV != nil || f.Journal != (adopt.Journal{}) || f.Form != d.Form || !slices.Equal(f.Features, d.Features) || !slices.Equal(f.Why, d.Why) || f.KeepRetain != d.KeepRetain) {
			rt.Fatalf("FormOnly decided %+v, the run %+v", f, d)
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

func ptr[T any](v T) *T { return &v }

package adopt_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/translate"
)

func migratedVSphere(t interface {
	Helper()
	Fatal(...any)
}, path, policy string) *v1.PersistentVolume {
	t.Helper()
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	in := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"},
		Spec: v1.PersistentVolumeSpec{Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeSource: v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: path, FSType: "ext4", StoragePolicyName: policy}}}}
	out, err := tr.TranslateInTreePVToCSI(klog.Background().V(100), in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A migrated vSphere PV becomes native with its First Class Disk ID as
// handle (publish, expand, delete, snapshot) once the disk is registered;
// before, the decision is predicted; a disk other PVs name keeps its
// migration handle. Unadopted gives the input back exactly.
func TestVSphere(t *testing.T) {
	pv := migratedVSphere(t, "[ds 1] kubevols/pvc-1.vmdk", "gold")
	orig := pv.DeepCopy()
	d, err := adopt.VSphere(adopt.VSphereInput{PV: pv})
	if err != nil || d.Form != adopt.FormNative || !d.Predicted || d.PV != nil {
		t.Fatalf("unregistered: %+v, %v", d, err)
	}
	d, err = adopt.VSphere(adopt.VSphereInput{PV: pv, FCD: "fcd-1"})
	if err != nil || d.Predicted || d.PV == nil {
		t.Fatalf("registered: %+v, %v", d, err)
	}
	if diff := cmp.Diff([]adopt.Feature{"publish", "expand", "delete", "snapshot"}, d.Features); diff != "" {
		t.Errorf("features (-want +got):\n%s", diff)
	}
	if d.PV.Spec.CSI.VolumeHandle != "fcd-1" || d.PV.Spec.CSI.VolumeAttributes["type"] != adopt.VSphereAttrType || d.PV.Spec.CSI.VolumeAttributes["storagepolicyname"] != "gold" {
		t.Errorf("adopted PV: %+v", d.PV.Spec.CSI)
	}
	if diff := cmp.Diff(orig, pv); diff != "" {
		t.Errorf("the input changed:\n%s", diff)
	}
	disk, ok, err := adopt.VSphereDiskOf(d.PV)
	if err != nil || !ok || disk != (adopt.VSphereDisk{Path: "[ds 1] kubevols/pvc-1.vmdk", FCD: "fcd-1"}) {
		t.Errorf("VSphereDiskOf: %+v %v %v", disk, ok, err)
	}
	prev, _, adopted, err := adopt.Unadopted(d.PV)
	if err != nil || !adopted {
		t.Fatalf("Unadopted: %v %v", adopted, err)
	}
	if _, ok, err := adopt.JournalOf(d.PV); ok || err != nil {
		t.Errorf("JournalOf an adopted vSphere PV: %t %v; its disk stays registered, no journal entry", ok, err)
	}
	if diff := cmp.Diff(orig, prev); diff != "" {
		t.Errorf("Unadopted does not give the input back (-want +got):\n%s", diff)
	}
	d, err = adopt.VSphere(adopt.VSphereInput{PV: pv, FCD: "fcd-1", ReferencedBy: []string{"pv2"}})
	if err != nil || d.Form != adopt.FormMigration || d.PV != nil || len(d.Why) != 1 {
		t.Errorf("shared: %+v, %v", d, err)
	}
	for _, bad := range []*v1.PersistentVolume{nil, {}, migratedVSphere(t, "[ds] a.vmdk", "")} {
		if bad != nil && bad.Spec.CSI != nil {
			bad.Spec.CSI.VolumeHandle = "6c5f2b4e-uuid"
		}
		if _, err := adopt.VSphere(adopt.VSphereInput{PV: bad, FCD: "x"}); !errors.Is(err, adopt.ErrNotAdoptable) {
			t.Errorf("%v: %v, want ErrNotAdoptable", bad, err)
		}
	}
}

// Any path and ID: the adoption round-trips through Unadopted, and a
// broken record is an error, never a panic.
func TestVSphereProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		path := "[" + rapid.StringMatching(`[a-zA-Z0-9 _/-]{1,12}`).Draw(t, "ds") + "] " + rapid.StringMatching(`[a-z0-9/_-]{1,20}`).Draw(t, "rel") + ".vmdk"
		pv := migratedVSphere(t, path, rapid.SampledFrom([]string{"", "gold"}).Draw(t, "policy"))
		d, err := adopt.VSphere(adopt.VSphereInput{PV: pv, FCD: rapid.StringMatching(`[0-9a-f-]{1,36}`).Draw(t, "fcd")})
		if err != nil {
			t.Fatal(err)
		}
		prev, _, _, err := adopt.Unadopted(d.PV)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(pv, prev); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
		broken := d.PV.DeepCopy()
		broken.Annotations[adopt.AnnVSphereDisk] = rapid.String().Draw(t, "ann")
		_, _, _, _ = adopt.Unadopted(broken)
	})
}

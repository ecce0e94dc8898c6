package apply

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// Each direction is found again from what a saved state records of it
// (its name and whether it is an undo), and its reverse gives back what it
// makes: an undo of the same family.
func TestDirectionValues(t *testing.T) {
	names := map[string]bool{}
	for _, d := range []Direction{Rewrite, Undo, AdoptCSI, UnadoptCSI} {
		if got := directionNamed(d.stateName(), d.IsUndo()); got != d {
			t.Errorf("%s: the state's direction %q (undo %t) reads back as %s", d, d.stateName(), d.IsUndo(), got)
		}
		r := d.Reverse()
		if r.Reverse() != d || r.IsUndo() == d.IsUndo() || r.AdoptsCSI() != d.AdoptsCSI() {
			t.Errorf("%s: reverse %s (undo %t, adopts %t)", d, r, r.IsUndo(), r.AdoptsCSI())
		}
		if d.What() == "" || d.Done() == "" || d.Scope() == "" || !strings.HasSuffix(d.AScope(), d.Scope()) {
			t.Errorf("%s: words %q %q %q %q", d, d.What(), d.Done(), d.Scope(), d.AScope())
		}
		if names[d.String()] {
			t.Errorf("two directions named %q", d)
		}
		names[d.String()] = true
	}
	if s := Direction(9).String(); s != "Direction(9)" {
		t.Errorf("an unknown direction is %q", s)
	}
}

// New refuses a direction it does not know and an adoption without Ceph,
// naming what it got.
func TestNewRefusesDirection(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewSimpleClientset()
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Direction: Direction(9)}, "Direction 9 is none of"},
		{Options{Direction: AdoptCSI}, "Direction adopt needs Ceph"},
		{Options{Direction: UnadoptCSI}, "Direction unadopt needs Ceph"},
	} {
		if _, err := New(c, tr, klog0(), nil, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v, want an error with %q", tc.o, err, tc.want)
		}
	}
}

// Which objects a direction replaces: in-tree ones for the rewrite, the
// ones the rewrite made for the undo, no StorageClass for the adoption of
// CSI PVs.
func TestDirectionReplaces(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	inTree := testenv.BoundPV("pv", "ns", "claim", "uid-1", v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[ds] kubevols/pv.vmdk"}})
	rewritten := testenv.BoundPV("pv", "ns", "claim", "uid-1", v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: plugin.VSphereDriverName, VolumeHandle: "[ds] kubevols/pv.vmdk"}})
	rewritten.Annotations = map[string]string{rewrite.AnnMigratedFrom: plugin.VSphereInTreePluginName}
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "thin"}, Provisioner: plugin.VSphereInTreePluginName}
	for _, tc := range []struct {
		d                          Direction
		inTree, rewritten, inClass bool
	}{
		{Rewrite, true, false, true},
		{Undo, false, true, false},
		{AdoptCSI, false, false, false},
		{UnadoptCSI, false, false, false},
	} {
		if got := tc.d.ReplacesPV(tr, inTree); got != tc.inTree {
			t.Errorf("%s replaces the in-tree PV: %t, want %t", tc.d, got, tc.inTree)
		}
		if got := tc.d.ReplacesPV(tr, rewritten); got != tc.rewritten {
			t.Errorf("%s replaces the rewritten PV: %t, want %t", tc.d, got, tc.rewritten)
		}
		if got := tc.d.ReplacesClass(tr, class); got != tc.inClass {
			t.Errorf("%s replaces the in-tree class: %t, want %t", tc.d, got, tc.inClass)
		}
	}
}

// A dry-run Writer writes nothing, even through a Run it is asked to step
// with the Lease held: the step's write is refused with ErrDryRun, which
// errors.Is finds through the object's error, and the PV is as it was.
func TestDryRunWriterTakesNoWrite(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	pv := testenv.BoundPV("pv", "ns", "claim", "uid-1", v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[ds] kubevols/pv.vmdk"}})
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim", Namespace: "ns", UID: "uid-1"},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv"}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	c := fake.NewSimpleClientset(pv, pvc, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: plugin.VSphereDriverName}})
	w, err := New(c, tr, klog0(), nil, Options{DryRun: true, Lease: HolderFunc(func() bool { return true })})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.PV(Target{Name: "pv"}).Step(context.Background())
	var oe *ObjectError
	if !errors.Is(err, ErrDryRun) || !errors.As(err, &oe) || oe.Object != rewrite.PVRef("pv") {
		t.Fatalf("a dry run's step: %v, want ErrDryRun for pv/pv", err)
	}
	if w.Writes() != 0 {
		t.Errorf("%d writes taken", w.Writes())
	}
	for _, a := range c.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("the dry run sent %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

package cli

import (
	"strings"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/translate"
)

// Input without CSIDrivers is named on stderr, with the hint to give them;
// a live cluster's list of none (Listed) or a file's CSIDriver is no such
// input.
func TestDriversForNamesInputWithoutDrivers(t *testing.T) {
	tr, err := translate.New()
	if err != nil {
		t.Fatal(err)
	}
	listed := DriverSet{}
	listed.Listed("csidrivers")
	other := DriverSet{}
	other.Listed("storageclasses")
	given := DriverSet{}
	given.Add(&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "rook-ceph.rbd.csi.ceph.com"}})
	for _, tc := range []struct {
		name string
		set  DriverSet
		hint bool
	}{
		{"none read", DriverSet{}, true},
		{"another kind listed", other, true},
		{"the cluster's none", listed, false},
		{"one given", given, false},
	} {
		var stderr strings.Builder
		if _, _, err := DriversFor(tr, tc.set, nil, &stderr); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(stderr.String(), "the input has no CSIDrivers"); got != tc.hint {
			t.Errorf("%s: hint %t, want %t: %q", tc.name, got, tc.hint, stderr.String())
		}
	}
}

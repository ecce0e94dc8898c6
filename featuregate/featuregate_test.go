package featuregate

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfeaturegate "k8s.io/component-base/featuregate"
	"pgregory.net/rapid"
)

// The reference table (shared/reference/featuregates.md), one token per
// release 1.17 .. 1.37 (1.37 read from v1.37.2's kube_features.go: none of them): - unknown, a alpha off, b beta off, B beta on,
// G GA on, L GA locked on, d deprecated off.
var reference = map[k8sfeaturegate.Feature]string{
	CSIMigration:                    "B B B B B B B B L L - - - - - - - - - - -",
	CSIMigrationAWS:                 "b b b b b b B B L L - - - - - - - - - - -",
	CSIMigrationGCE:                 "b b b b b b B B L L L - - - - - - - - - -",
	CSIMigrationOpenStack:           "a b b b B B B L L - - - - - - - - - - - -",
	CSIMigrationAzureDisk:           "a a b b b b B G L L - - - - - - - - - - -",
	CSIMigrationAzureFile:           "a a a a b b b B B G L L L - - - - - - - -",
	CSIMigrationvSphere:             "- - b b b b b b B L L L - - - - - - - - -",
	CSIMigrationPortworx:            "- - - - - - a a b b b b b b B B L L L - -",
	CSIMigrationRBD:                 "- - - - - - a a a a a d d d - - - - - - -",
	CSIMigrationAWSComplete:         "a a a a - - - - - - - - - - - - - - - - -",
	CSIMigrationGCEComplete:         "a a a a - - - - - - - - - - - - - - - - -",
	CSIMigrationAzureDiskComplete:   "a a a a - - - - - - - - - - - - - - - - -",
	CSIMigrationAzureFileComplete:   "a a a a - - - - - - - - - - - - - - - - -",
	CSIMigrationOpenStackComplete:   "a a a a - - - - - - - - - - - - - - - - -",
	CSIMigrationvSphereComplete:     "- - b b b - - - - - - - - - - - - - - - -",
	InTreePluginAWSUnregister:       "- - - - a a a a a a a a a a - - - - - - -",
	InTreePluginGCEUnregister:       "- - - - a a a a a a a a a a - - - - - - -",
	InTreePluginAzureDiskUnregister: "- - - - a a a a a a a a a a - - - - - - -",
	InTreePluginAzureFileUnregister: "- - - - a a a a a a a a a a - - - - - - -",
	InTreePluginOpenStackUnregister: "- - - - a a a a a a a a a a - - - - - - -",
	InTreePluginvSphereUnregister:   "- - - - a a a a a a a a a a - - - - - - -",
	InTreePluginRBDUnregister:       "- - - - - - a a a a a d d d - - - - - - -",
	InTreePluginPortworxUnregister:  "- - - - - - a a a a a a a a a a a a a - -",
	CSINodeExpandSecret:             "- - - - - - - - a a B B L L - - - - - - -",
}

func token(spec k8sfeaturegate.FeatureSpec, ok bool) string {
	switch {
	case !ok:
		return "-"
	case spec.PreRelease == k8sfeaturegate.Deprecated && !spec.Default:
		return "d"
	case spec.PreRelease == k8sfeaturegate.Alpha && !spec.Default:
		return "a"
	case spec.PreRelease == k8sfeaturegate.Beta && !spec.Default:
		return "b"
	case spec.PreRelease == k8sfeaturegate.Beta && spec.Default:
		return "B"
	case spec.PreRelease == k8sfeaturegate.GA && spec.Default && spec.LockToDefault:
		return "L"
	case spec.PreRelease == k8sfeaturegate.GA && spec.Default:
		return "G"
	}
	return "?"
}

func TestGateTable(t *testing.T) {
	for minor := 17; minor <= 37; minor++ {
		fg, err := ForVersion(minor)
		if err != nil {
			t.Fatal(err)
		}
		all := fg.GetAll()
		for gate, row := range reference {
			want := strings.Fields(row)[minor-17]
			spec, ok := all[gate]
			if got := token(spec, ok); got != want {
				t.Errorf("1.%d %s: %s, reference %s", minor, gate, got, want)
			}
			if ok && fg.Enabled(gate) != spec.Default {
				t.Errorf("1.%d %s: Enabled %v, default %v", minor, gate, fg.Enabled(gate), spec.Default)
			}
		}
		for gate := range all {
			if gate == "AllAlpha" || gate == "AllBeta" {
				continue // component-base's own pseudo gates
			}
			if _, ok := reference[gate]; !ok {
				t.Errorf("1.%d has gate %s, not in the reference", minor, gate)
			}
		}
	}
}

func TestGateErrors(t *testing.T) {
	fg, _ := ForVersion(31)
	if err := fg.Set("CSIMigrationRBD=true"); err == nil || err.Error() != "unrecognized feature gate: CSIMigrationRBD" {
		t.Errorf("removed gate: %v", err)
	}
	fg, _ = ForVersion(26)
	if err := fg.Set("CSIMigrationvSphere=false"); err == nil || !strings.Contains(err.Error(), "cannot set feature gate CSIMigrationvSphere to false, feature is locked to true") {
		t.Errorf("locked gate: %v", err)
	}
	fg, _ = ForVersion(18)
	if err := fg.Set("CSIMigrationvSphere=true"); err == nil || !strings.Contains(err.Error(), "unrecognized feature gate") {
		t.Errorf("gate before its release: %v", err)
	}
	if _, err := ForVersion(13); err == nil {
		t.Error("1.13 accepted")
	}
	// The project's own gates are never Kubernetes gates.
	if _, ok := fg.GetAll()[CSIMigrationCephFS]; ok {
		t.Error("CephFS gate in a Kubernetes gate set")
	}
	if err := AddProjectGates(fg); err != nil || !fg.Enabled(CSIMigrationCephFS) || fg.Enabled(InTreePluginCephFSUnregister) {
		t.Errorf("project gates: %v", err)
	}
	if l, _ := LifecycleOf(CSIMigrationCephFS); !l.Project {
		t.Error("CephFS gate not marked as the project's")
	}
}

func gates(t testing.TB, minor int, set string) Gates {
	fg, err := ForVersion(minor)
	if err != nil {
		t.Fatal(err)
	}
	if err := AddProjectGates(fg); err != nil {
		t.Fatal(err)
	}
	if set != "" {
		if err := fg.Set(set); err != nil {
			t.Fatal(err)
		}
	}
	return fg
}

func TestDecisions(t *testing.T) {
	for _, tc := range []struct {
		minor          int
		set            string
		p              PluginGates
		enabled, compl bool
		owner          Owner
	}{
		{20, "", VSphere, false, false, OwnerInTree},
		{20, "CSIMigrationvSphere=true", VSphere, true, false, OwnerCSI},
		{20, "CSIMigrationvSphere=true,CSIMigration=false", VSphere, false, false, OwnerInTree},
		{20, "CSIMigrationvSphere=true,CSIMigrationvSphereComplete=true", VSphere, true, true, OwnerCSI},
		{21, "CSIMigrationvSphere=true,CSIMigrationvSphereComplete=true", VSphere, true, true, OwnerCSI},
		{21, "CSIMigrationvSphere=true,InTreePluginvSphereUnregister=true", VSphere, true, true, OwnerCSI},
		{22, "CSIMigrationvSphere=true", VSphere, true, false, OwnerCSI},
		{25, "", VSphere, true, false, OwnerCSI},
		{26, "InTreePluginvSphereUnregister=true", VSphere, true, true, OwnerCSI},
		{29, "", VSphere, true, false, OwnerCSI},
		{30, "", VSphere, true, true, OwnerCSI},
		{36, "", VSphere, true, true, OwnerCSI},
		{37, "", VSphere, true, true, OwnerCSI},
		{23, "CSIMigrationRBD=true", RBD, true, false, OwnerCSI},
		{24, "CSIMigrationRBD=true,CSIMigration=false", RBD, false, false, OwnerInTree},
		{28, "CSIMigrationRBD=true,InTreePluginRBDUnregister=true", RBD, true, true, OwnerCSI},
		{30, "", RBD, false, false, OwnerInTree},
		{31, "", RBD, false, false, OwnerNone},
		{30, "", CephFS, true, false, OwnerCSI},
		{30, "CSIMigrationCephFS=false", CephFS, false, false, OwnerInTree},
		{31, "CSIMigrationCephFS=false", CephFS, false, false, OwnerNone},
		{31, "", CephFS, true, true, OwnerCSI},
	} {
		t.Run(fmt.Sprintf("1.%d %s %s", tc.minor, tc.p.InTreeName, tc.set), func(t *testing.T) {
			fg := gates(t, tc.minor, tc.set)
			if got := MigrationEnabled(fg, tc.minor, tc.p); got != tc.enabled {
				t.Errorf("enabled %v", got)
			}
			if got := MigrationComplete(fg, tc.minor, tc.p); got != tc.compl {
				t.Errorf("complete %v", got)
			}
			if got := OwnerOf(fg, tc.minor, tc.p); got != tc.owner {
				t.Errorf("owner %v", got)
			}
		})
	}
}

func TestMigratedPluginsAnnotation(t *testing.T) {
	if got := ParseMigratedPlugins(" kubernetes.io/vsphere-volume,,kubernetes.io/rbd, kubernetes.io/rbd"); !cmp.Equal(got, []string{"kubernetes.io/rbd", "kubernetes.io/vsphere-volume"}) {
		t.Errorf("parse %q", got)
	}
	if got := FormatMigratedPlugins([]string{"kubernetes.io/vsphere-volume", "kubernetes.io/rbd"}); got != "kubernetes.io/rbd,kubernetes.io/vsphere-volume" {
		t.Errorf("format %q", got)
	}
	if got := KubeletMigratedPlugins(gates(t, 26, "CSIMigrationRBD=true"), 26, Plugins...); got != "kubernetes.io/cephfs,kubernetes.io/rbd,kubernetes.io/vsphere-volume" {
		t.Errorf("kubelet %q", got)
	}
	rapid.Check(t, func(t *rapid.T) {
		list := rapid.SliceOf(rapid.StringMatching(`[a-z./-]{1,20}`)).Draw(t, "plugins")
		s := FormatMigratedPlugins(list)
		if FormatMigratedPlugins(ParseMigratedPlugins(s)) != s {
			t.Fatalf("not a fixed point: %q", s)
		}
	})
}

func TestAttachRoute(t *testing.T) {
	node := func(ann string, drivers ...string) *storagev1.CSINode {
		n := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{AnnMigratedPlugins: ann}}}
		for _, d := range drivers {
			n.Spec.Drivers = append(n.Spec.Drivers, storagev1.CSINodeDriver{Name: d})
		}
		return n
	}
	on := gates(t, 26, "CSIMigrationRBD=true")
	for _, tc := range []struct {
		name string
		fg   Gates
		n    *storagev1.CSINode
		want Route
		err  error
	}{
		{"off", gates(t, 26, ""), node("kubernetes.io/rbd", RBD.Driver), RouteInTree, nil},
		{"no CSINode", on, nil, RouteInTree, nil},
		{"not listed", on, node("kubernetes.io/vsphere-volume", RBD.Driver), RouteInTree, nil},
		{"listed with driver", on, node("kubernetes.io/rbd", RBD.Driver), RouteCSI, nil},
		{"listed without driver", on, node("kubernetes.io/rbd"), "", ErrDriverNotInstalled},
		{"complete ignores node", gates(t, 26, "CSIMigrationRBD=true,InTreePluginRBDUnregister=true"), nil, RouteCSI, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AttachRoute(tc.fg, 26, RBD, "n1", tc.n)
			if got != tc.want || !errors.Is(err, tc.err) {
				t.Errorf("%v, %v", got, err)
			}
			if tc.err != nil && !strings.Contains(err.Error(), "is migrated on node n1 but driver rbd.csi.ceph.com is not installed") {
				t.Errorf("message %q", err)
			}
		})
	}
}

func TestCheckSkew(t *testing.T) {
	cp := Component{Minor: 26, Gates: gates(t, 26, "")}
	nodes := []Node{
		{Name: "ok", Kubelet: Component{Minor: 26, Gates: gates(t, 26, "")}},
		{Name: "early", Kubelet: Component{Minor: 26, Gates: gates(t, 26, "CSIMigrationRBD=true")}},
		{Name: "drained", Kubelet: Component{Minor: 26, Gates: gates(t, 26, "CSIMigrationRBD=true")}, Drained: true},
	}
	got := CheckSkew(cp, nodes, RBD)
	if len(got) != 1 || got[0].Object != "node/early" || got[0].Code != FindingKubeletAhead || !strings.Contains(got[0].Message, "controllers in-tree, kubelet csi") {
		t.Errorf("%+v", got)
	}
	cp = Component{Minor: 26, Gates: gates(t, 26, "CSIMigrationRBD=true,InTreePluginRBDUnregister=true")}
	got = CheckSkew(cp, nodes[:1], RBD)
	if len(got) != 1 || got[0].Object != "node/ok" || got[0].Code != FindingKubeletBehind || !strings.Contains(got[0].Message, "complete") {
		t.Errorf("%+v", got)
	}
	cp = Component{Minor: 26, Gates: gates(t, 26, "CSIMigrationRBD=true")}
	if got := CheckSkew(cp, nodes, RBD); len(got) != 0 {
		t.Errorf("the KEP's middle state reported: %+v", got)
	}
}

func TestUpgradeSteps(t *testing.T) {
	for _, tc := range []struct {
		minor int
		p     PluginGates
		want  string
	}{
		{24, VSphere, "together with CSIMigration=true"},
		{26, VSphere, "locked on in 1.26"},
		{29, VSphere, "migration is GA and always on"},
		{30, VSphere, "there is no in-tree plugin"},
		{27, RBD, "InTreePluginRBDUnregister=true"},
		{31, RBD, "rewrite the stored PVs"},
		{30, CephFS, "this project's gate CSIMigrationCephFS"},
		{18, VSphere, "upgrade to 1.19 or later"},
	} {
		got := strings.Join(UpgradeSteps(tc.minor, tc.p), "\n")
		if !strings.Contains(got, tc.want) {
			t.Errorf("1.%d %s: %q lacks %q", tc.minor, tc.p.InTreeName, got, tc.want)
		}
	}
}

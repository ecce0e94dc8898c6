package envcheck_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/plugins/vsphere/envcheck"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want envcheck.Version
	}{
		{"7.0.3", envcheck.Version{Major: 7, Patch: 3}},
		{"7.0.3.1", envcheck.Version{Major: 7, Patch: 3, Revision: 1}},
		{"8.0.2.00300", envcheck.Version{Major: 8, Patch: 2, Revision: 300}},
		{"6.7", envcheck.Version{Major: 6, Minor: 7}},
		{"v7.0.3", envcheck.Version{Major: 7, Patch: 3}},
		{"6.7.0 build 1234", envcheck.Version{Major: 6, Minor: 7, Build: 1234}},
		{"7.0 U3", envcheck.Version{Major: 7, Patch: 3}},
		{"7.0U3c", envcheck.Version{Major: 7, Patch: 3, Letter: "c"}},
		{"7.0 Update 2", envcheck.Version{Major: 7, Patch: 2}},
		{" 8.0.08 ", envcheck.Version{Major: 8, Patch: 8}},
	} {
		got, err := envcheck.ParseVersion(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.in, diff)
		}
	}
	for _, bad := range []string{"", "7", "seven", "7.0.x", "7.0 U", "7.0 Uabc", "7.0.3 U1", "1.2.3.4.5", "6.7.0 build x", "-1.0"} {
		if v, err := envcheck.ParseVersion(bad); err == nil {
			t.Errorf("%q parsed as %v", bad, v)
		}
	}
	// Ordering as an administrator means it.
	order := []string{"6.7", "6.7.0 build 99", "6.7.3", "7.0 U2", "7.0U3", "7.0U3c", "7.0.3.1", "8.0.2.00300"}
	for i := 1; i < len(order); i++ {
		a, _ := envcheck.ParseVersion(order[i-1])
		b, _ := envcheck.ParseVersion(order[i])
		if a.Compare(b) > 0 {
			t.Errorf("%s > %s", order[i-1], order[i])
		}
	}
}

func TestParseHardwareVersion(t *testing.T) {
	for in, want := range map[string]int{"vmx-08": 8, "vmx-09": 9, "vmx-15": 15, "19": 19} {
		if got, err := envcheck.ParseHardwareVersion(in); err != nil || got != want {
			t.Errorf("%q: %d, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "vmx-", "vmx-x", "xmv-15", "vmx--1"} {
		if _, err := envcheck.ParseHardwareVersion(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// summaries are Check's findings as "code object severity".
func summaries(env envcheck.Environment) []string {
	var out []string
	for _, r := range envcheck.Check(env) {
		out = append(out, fmt.Sprintf("%s %s %s", r.Code, r.Object, r.Severity))
	}
	return out
}

func TestCheck(t *testing.T) {
	env := envcheck.Environment{
		VCenterVersion:         "7.0.1",
		Hosts:                  []envcheck.Host{{Name: "esx1", Version: "6.7.0 build 1234"}, {Name: "esx2", Version: "7.0 U3"}, {Name: "esx3", Version: "7.0 U3 something"}},
		VMs:                    []envcheck.VM{{Name: "node-1", HardwareVersion: "vmx-09"}, {Name: "node-2", HardwareVersion: "vmx-19"}},
		ExistingDrivers:        []string{"csidriver/csi.envcheck.vmware.com"},
		MaxBlockVolumesPerNode: 255,
	}
	got := summaries(env)
	want := []string{
		"check_deprecated_hw_version vm/node-1 Blocker",
		"check_deprecated_vcenter vcenter Blocker",
		"check_deprecated_esxi_version host/esx1 Blocker",
		"block_volume_limit_error host/esx1 Warning",
		"block_volume_limit_error host/esx2 Warning",
		"check_unparsable_version host/esx3 Blocker",
		"existing_driver_found csidriver/csi.envcheck.vmware.com Blocker",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// With the driver installed, failed minimums degrade instead.
	env = envcheck.Environment{VCenterError: "connection refused", DriverInstalled: true, VMs: []envcheck.VM{{Name: "n", HardwareVersion: "vmx-13"}}}
	got = summaries(env)
	want = []string{"check_deprecated_hw_version vm/n Warning", "vcenter_api_error vcenter Warning"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// For installing or using the driver, 7.0.1 (below the operator's
	// upgrade minimum 7.0.2) warns; 6.7.0 still blocks.
	env = envcheck.Environment{VCenterVersion: "7.0.1", Hosts: []envcheck.Host{{Name: "h", Version: "6.7.0"}}, Install: true}
	got = summaries(env)
	want = []string{"check_deprecated_vcenter vcenter Warning", "check_deprecated_esxi_version host/h Blocker"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Install (-want +got):\n%s", diff)
	}
	if r := envcheck.Check(envcheck.Environment{VCenterVersion: "8.0.2.00300", Hosts: []envcheck.Host{{Name: "h", Version: "8.0.1"}}, MaxBlockVolumesPerNode: 255}); len(r) != 0 {
		t.Errorf("a good environment fails: %+v", r)
	}
}

func TestParseVersionProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := envcheck.Version{Major: rapid.IntRange(0, 99).Draw(t, "major"), Minor: rapid.IntRange(0, 99).Draw(t, "minor"),
			Patch: rapid.IntRange(0, 99).Draw(t, "patch"), Revision: rapid.IntRange(0, 99999).Draw(t, "rev")}
		got, err := envcheck.ParseVersion(v.String())
		if err != nil || got != v {
			t.Fatalf("%s: %+v %v", v, got, err)
		}
		_, _ = envcheck.ParseVersion(rapid.String().Draw(t, "any"))
	})
}

func BenchmarkParseVersion(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := envcheck.ParseVersion("7.0U3c"); err != nil {
			b.Fatal(err)
		}
	}
}

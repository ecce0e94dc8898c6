// Package envcheck checks a vSphere environment for the CSI driver the way
// OpenShift's vSphere problem detector does: vCenter and ESXi versions and
// VM hardware versions against what vSphere CSI needs.
package envcheck

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/csimigrate/csimigrate/plugin"
)

// Version is a vSphere (vCenter or ESXi) version as an administrator means
// it: 7.0 Update 3c is {7, 0, 3, 0, "c"}; the API version 8.0.2.00300 is
// {8, 0, 2, 300, ""}.
type Version struct {
	Major, Minor, Patch int
	// Revision is a fourth number ("7.0.3.1", "8.0.2.00300").
	Revision int
	// Letter is an update's letter ("c" of "7.0U3c"), lower case.
	Letter string
	// Build is the build number of "6.7.0 build 1234" forms (not compared).
	Build int
}

// String formats the version as major.minor.patch[.revision], or as
// "major.minor U<patch><letter>" for an update with a letter; ParseVersion
// reads it back.
func (v Version) String() string {
	if v.Letter != "" {
		return fmt.Sprintf("%d.%d U%d%s", v.Major, v.Minor, v.Patch, v.Letter)
	}
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Revision != 0 {
		s += "." + strconv.Itoa(v.Revision)
	}
	return s
}

// Compare orders versions by major, minor, patch, revision and letter.
func (v Version) Compare(w Version) int {
	return cmp.Or(cmp.Compare(v.Major, w.Major), cmp.Compare(v.Minor, w.Minor), cmp.Compare(v.Patch, w.Patch),
		cmp.Compare(v.Revision, w.Revision), cmp.Compare(v.Letter, w.Letter))
}

// AtLeast reports v >= w.
func (v Version) AtLeast(w Version) bool { return v.Compare(w) >= 0 }

// ParseVersion parses the forms vSphere versions come in: "7.0.3",
// "7.0.3.1", "8.0.2.00300" (API versions), "6.7", "v7.0.3", "6.7.0 build
// 1234", "7.0 U3", "7.0U3c", "7.0 Update 3". An update number is the patch
// level. Numbers are decimal (leading zeros do not make them octal).
func ParseVersion(s string) (Version, error) {
	in := s
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "v"), "V")
	var v Version
	// "... build 1234"
	if i := strings.Index(asciiLower(s), "build"); i >= 0 {
		b := strings.TrimSpace(strings.TrimLeft(s[i+len("build"):], " -:"))
		n, err := strconv.Atoi(b)
		if err != nil || n < 0 {
			return Version{}, fmt.Errorf("vSphere version %q: build %q is not a number", in, b)
		}
		v.Build = n
		s = strings.TrimSpace(s[:i])
	}
	// "7.0 U3c", "7.0U3", "7.0 Update 3"
	update, hasUpdate := "", false
	lower := asciiLower(s)
	for _, sep := range []string{" update ", "update", " u", "u"} {
		if i := strings.Index(lower, sep); i > 0 {
			update, hasUpdate = strings.TrimSpace(s[i+len(sep):]), true
			s = strings.TrimSpace(s[:i])
			break
		}
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 4 {
		return Version{}, fmt.Errorf("vSphere version %q: want major.minor[.patch[.revision]], optionally with \" U<update>\" or \" build <n>\"", in)
	}
	nums := make([]int, 4)
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 31)
		if err != nil {
			return Version{}, fmt.Errorf("vSphere version %q: %q is not a decimal number", in, p)
		}
		nums[i] = int(n)
	}
	v.Major, v.Minor, v.Patch, v.Revision = nums[0], nums[1], nums[2], nums[3]
	if hasUpdate {
		if len(parts) > 2 {
			return Version{}, fmt.Errorf("vSphere version %q: an update (U<n>) goes with major.minor only", in)
		}
		digits := strings.TrimRightFunc(update, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' })
		letter := strings.ToLower(update[len(digits):])
		n, err := strconv.ParseUint(digits, 10, 31)
		if err != nil || len(letter) > 1 {
			return Version{}, fmt.Errorf("vSphere version %q: update %q: want a number and at most one letter (U3, U3c)", in, update)
		}
		v.Patch, v.Letter = int(n), letter
	}
	return v, nil
}

// asciiLower lowers A-Z only, so byte offsets into the result are offsets
// into s (strings.ToLower may change the length of non-ASCII text).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// ParseHardwareVersion parses a VM hardware version, "vmx-15" or "15".
// "vmx-08" is 8 (decimal, unlike the operator's base-0 parse that rejects
// it as octal).
func ParseHardwareVersion(s string) (int, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "vmx-")
	n, err := strconv.ParseUint(t, 10, 31)
	if err != nil || t == "" {
		return 0, fmt.Errorf("VM hardware version %q: want vmx-<number>", s)
	}
	return int(n), nil
}

// Thresholds of the driver operator's checks.
var (
	MinVersion        = Version{Major: 6, Minor: 7, Patch: 3}
	MinUpgradeVersion = Version{Major: 7, Minor: 0, Patch: 2}
	// MinVersionManyVolumes is the ESXi version needed for more than
	// MaxVolumesOldESXi block volumes per node.
	MinVersionManyVolumes = Version{Major: 8}
)

// Check thresholds that are not versions.
const (
	MinHardwareVersion = 15
	MaxVolumesOldESXi  = 59
)

// Check status names, as the OpenShift vSphere CSI driver operator names
// them, and this package's own for unparsable input.
const (
	StatusHardwareVersion   = "check_deprecated_hw_version"
	StatusVCenterVersion    = "check_deprecated_vcenter"
	StatusESXiVersion       = "check_deprecated_esxi_version"
	StatusVCenterAPIError   = "vcenter_api_error"
	StatusExistingDriver    = "existing_driver_found"
	StatusBlockVolumeLimit  = "block_volume_limit_error"
	StatusUnparsableVersion = "check_unparsable_version"
)

// What a failed check does, as its finding's severity: the operator's
// BlockUpgrade (the cluster must not be upgraded, and the driver cannot be
// installed) and Degrade (the installed driver is reported degraded).
const (
	OutcomeBlockUpgrade = plugin.SeverityBlocker
	OutcomeDegrade      = plugin.SeverityWarning
)

// Host is an ESXi host.
type Host struct {
	Name    string
	Version string
}

// VM is a node's virtual machine.
type VM struct {
	Name            string
	HardwareVersion string
}

// Environment describes what the checks look at.
type Environment struct {
	// VCenterVersion is the vCenter API version; VCenterError is set when it
	// could not be read.
	VCenterVersion string
	VCenterError   string
	Hosts          []Host
	VMs            []VM
	// DriverInstalled: the operator already installed its driver.
	DriverInstalled bool
	// ExistingDrivers names vSphere CSI drivers not installed by the operator
	// (CSIDriver or CSINode entries found).
	ExistingDrivers []string
	// MaxBlockVolumesPerNode is the configured attach limit per node.
	MaxBlockVolumesPerNode int
	// Install: the checks are for installing or using the driver, not for
	// the operator's upgrade of it: a version below MinUpgradeVersion (but
	// at least MinVersion) is then a warning, not a blocker.
	Install bool
}

// Check runs the driver operator's environment checks and returns the failed
// ones as findings (Code the problem detector's alert name, Object the VM,
// host or driver, Severity the outcome), in a stable order. An unparsable version is a failed check
// (StatusUnparsableVersion), never a pass.
func Check(env Environment) []plugin.Finding {
	var out []plugin.Finding
	required := OutcomeBlockUpgrade
	if env.DriverInstalled {
		required = OutcomeDegrade
	}
	fail := func(status, object string, outcome plugin.Severity, format string, args ...any) {
		out = append(out, plugin.Finding{Code: status, Object: object, Severity: outcome, Message: fmt.Sprintf(format, args...)})
	}
	for _, vm := range env.VMs {
		hw, err := ParseHardwareVersion(vm.HardwareVersion)
		switch {
		case err != nil:
			fail(StatusUnparsableVersion, "vm/"+vm.Name, required, "%v", err)
		case hw < MinHardwareVersion:
			fail(StatusHardwareVersion, "vm/"+vm.Name, required, "hardware version vmx-%d is older than vmx-%d", hw, MinHardwareVersion)
		}
	}
	versionChecks := func(status, object, s string) (Version, bool) {
		v, err := ParseVersion(s)
		switch {
		case err != nil:
			fail(StatusUnparsableVersion, object, required, "%v", err)
			return v, false
		case !v.AtLeast(MinVersion):
			fail(status, object, required, "version %s is older than the required %s", v, MinVersion)
		case !v.AtLeast(MinUpgradeVersion) && env.Install:
			fail(status, object, OutcomeDegrade, "version %s is older than %s, which the driver operator needs to upgrade the driver", v, MinUpgradeVersion)
		case !v.AtLeast(MinUpgradeVersion):
			fail(status, object, OutcomeBlockUpgrade, "version %s is older than %s, needed to upgrade", v, MinUpgradeVersion)
		}
		return v, true
	}
	if env.VCenterError != "" {
		fail(StatusVCenterAPIError, "vcenter", required, "cannot read the vCenter version: %s", env.VCenterError)
	} else {
		versionChecks(StatusVCenterVersion, "vcenter", env.VCenterVersion)
	}
	for _, h := range env.Hosts {
		v, ok := versionChecks(StatusESXiVersion, "host/"+h.Name, h.Version)
		if ok && env.MaxBlockVolumesPerNode > MaxVolumesOldESXi && !v.AtLeast(MinVersionManyVolumes) {
			fail(StatusBlockVolumeLimit, "host/"+h.Name, OutcomeDegrade, "%d block volumes per node need ESXi %s or later, host runs %s",
				env.MaxBlockVolumesPerNode, MinVersionManyVolumes, v)
		}
	}
	for _, d := range env.ExistingDrivers {
		fail(StatusExistingDriver, d, OutcomeBlockUpgrade, "a vSphere CSI driver not installed by the operator exists (%s); remove it first", d)
	}
	return out
}

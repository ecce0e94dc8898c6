package vcenter_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/apply/vcenter"
)

// A csi-vsphere.conf as the driver's installation documents it: [Global]
// defaults, one [VirtualCenter] section, quoted values, comments.
func TestParseConfig(t *testing.T) {
	conf := `
; the driver's configuration
[Global]
cluster-id = "prod-1"
cluster-distribution = "OpenShift"
port = "8443"
insecure-flag = "true"

[VirtualCenter "10.0.0.5"]
user = "administrator@vsphere.local"   # the driver's user
password = "p;a\"ss # "
datacenters = "dc-a, /folder/dc-b,"

[Labels]
topology-categories = "k8s-zone"
`
	cfg, err := vcenter.ParseConfig([]byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	want := &vcenter.Config{ClusterID: "prod-1", VCenters: []vcenter.Server{{Host: "10.0.0.5", Port: "8443", User: "administrator@vsphere.local",
		Password: `p;a"ss # `, Insecure: true, Datacenters: []string{"dc-a", "/folder/dc-b"}}}}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	s, err := cfg.Server()
	if err != nil {
		t.Fatal(err)
	}
	for _, printed := range []string{s.String(), fmt.Sprintf("%v %+v %#v", s, s, s)} {
		if strings.Contains(printed, "ss #") {
			t.Errorf("the password is printed: %s", printed)
		}
	}
}

// Bad configurations are refused with the line and what is wanted, never
// with the password's value.
func TestParseConfigRefuses(t *testing.T) {
	for conf, want := range map[string]string{
		"":                            "empty",
		"[Global]\ncluster-id = x\n":  `no [VirtualCenter "host"] section`,
		"user = x\n":                  "line 1: a key before any [section]",
		"[VirtualCenter]\nuser = x\n": `line 1: [VirtualCenter] needs the vCenter's host`,
		"[VirtualCenter \"h\"]\npassword = \"s3cr3t\n":             "line 2: key password: its value's quote is not closed",
		"[VirtualCenter \"h\"]\nport = 99999\nuser = u\n":          `port "99999": want a port number`,
		"[VirtualCenter \"h\"]\ninsecure-flag = maybe\nuser = u\n": `insecure-flag "maybe": want true or false`,
		"[VirtualCenter \"h\"]\npassword = s3cr3t\n":               `[VirtualCenter "h"] has no user`,
		"[VirtualCenter \"h\"]\nuser = u\n[VirtualCenter \"h\"]\n": `line 3: vCenter "h" is configured twice`,
		"[VirtualCenter \"h\"\n":                                   "a section header without ']'",
	} {
		_, err := vcenter.ParseConfig([]byte(conf))
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, vcenter.ErrConfig) {
			t.Errorf("%q: %v, want %q", conf, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%q: the password is in the error: %v", conf, err)
		}
	}
	cfg, err := vcenter.ParseConfig([]byte("[Global]\nuser = u\n[VirtualCenter \"a\"]\n[VirtualCenter \"b\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.Server(); err == nil || !strings.Contains(err.Error(), "2 vCenters (a, b)") {
		t.Errorf("two vCenters: %v", err)
	}
}

// Any input parses or is refused without a panic; a password written
// quoted (with escapes) reads back as it was, and is in no error.
func TestParseConfigProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		_, _ = vcenter.ParseConfig([]byte(rapid.String().Draw(t, "any")))
		pw := rapid.StringMatching(`[ -~\t\n]{1,20}`).Draw(t, "password")
		quoted := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`).Replace(pw)
		cfg, err := vcenter.ParseConfig([]byte("[VirtualCenter \"h\"]\nuser = u\npassword = \"" + quoted + "\"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.VCenters[0].Password != pw {
			t.Fatalf("password %q read as %q", pw, cfg.VCenters[0].Password)
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("[VirtualCenter \"h\"]\nuser = u\npassword = \"x\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := vcenter.ParseConfig(data)
		if err == nil && len(cfg.VCenters) == 0 {
			t.Fatal("a configuration without vCenters accepted")
		}
	})
}

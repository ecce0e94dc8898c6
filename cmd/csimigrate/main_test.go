package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/input"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func runCmd(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-golden +got):\n%s", name, diff)
	}
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"plan.txt", nil, cli.ExitBlocked},
		{"plan-wide.txt", []string{"plan", "-sample", "-o", "wide"}, cli.ExitBlocked},
		{"plan.json", []string{"plan", "-sample", "-o", "json"}, cli.ExitBlocked},
		{"plan-1.24.txt", []string{"plan", "-sample", "-kubernetes-version", "1.24"}, cli.ExitBlocked},
		// Newer than the gate table: accepted, with its newest rules.
		{"plan-1.38.txt", []string{"plan", "-sample", "-kubernetes-version", "1.38"}, cli.ExitBlocked},
		{"translate.yaml", []string{"translate", "-sample"}, cli.ExitBlocked},
		{"rewrite.sh", []string{"rewrite", "-sample"}, cli.ExitBlocked},
		{"rewrite-dump.yaml", []string{"rewrite", "-o", "yaml", "-f", "testdata/dump.json", "-f", "testdata/drivers-upstream.yaml", "-f", "testdata/ceph-csi-manifests.yaml"}, cli.ExitOK},
		{"plan-dump.txt", []string{"plan", "-f", "testdata/dump.json", "-f", "testdata/drivers-upstream.yaml", "-f", "testdata/ceph-csi-manifests.yaml", "-kubernetes-version", "v1.31.2", "-vsphere-topology-categories", "k8s-zone,k8s-region"}, cli.ExitOK},
		{"plan-csinodes.txt", []string{"plan", "-f", "testdata/dump.json", "-f", "testdata/drivers-upstream.yaml", "-f", "testdata/ceph-csi-manifests.yaml", "-f", "testdata/csinodes.yaml"}, cli.ExitBlocked},
		{"plan-csinodes-ok.txt", []string{"plan", "-f", "testdata/dump.json", "-f", "testdata/drivers-upstream.yaml", "-f", "testdata/ceph-csi-manifests.yaml", "-f", "testdata/csinodes.yaml", "-vsphere-topology-categories", "openshift-zone,openshift-region"}, cli.ExitOK},
		// Rook: the drivers' names are Rook's; Kubernetes' gates route to
		// the upstream names, so none is advised.
		{"plan-rook.txt", []string{"plan", "-f", "testdata/dump.json", "-f", "testdata/drivers-rook.yaml", "-kubernetes-version", "1.30", "-vsphere-topology-categories", "k8s-zone,k8s-region"}, cli.ExitOK},
		{"rewrite-rook.yaml", []string{"rewrite", "-o", "yaml", "-f", "testdata/dump.json", "-f", "testdata/drivers-rook.yaml"}, cli.ExitOK},
		// The ceph-csi-operator without the migration's entry: the
		// ClientProfile and CephConnection to create.
		{"plan-operator.txt", []string{"plan", "-f", "testdata/dump.json", "-f", "testdata/operator.yaml", "-vsphere-topology-categories", "k8s-zone,k8s-region"}, cli.ExitBlocked},
		// No Ceph CSI: the Ceph volumes wait for their driver.
		{"plan-no-ceph-csi.txt", []string{"plan", "-f", "testdata/dump.json", "-f", "testdata/drivers-vsphere.yaml", "-f", "testdata/csinodes.yaml", "-vsphere-topology-categories", "openshift-zone,openshift-region"}, cli.ExitBlocked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runCmd(t, "", tc.args...)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			golden(t, tc.name, out)
		})
	}
}

func TestClusterID(t *testing.T) {
	out, _, code := runCmd(t, "", "clusterid", "-monitors", "10.70.53.126:6789")
	if code != cli.ExitOK || out != "b7f67366bb43f32e07d8a261a7840da9\n" {
		t.Errorf("%q %d", out, code)
	}
	_, stderr, code := runCmd(t, "", "clusterid")
	if code != cli.ExitUsage || !strings.Contains(stderr, "-monitors is required") {
		t.Errorf("%q %d", stderr, code)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"help"}, {"plan", "-h"}, {"translate", "-help"}, {"rewrite", "--help"}, {"clusterid", "-h"}} {
		out, stderr, code := runCmd(t, "", args...)
		if code != cli.ExitOK || !strings.Contains(out+stderr, "Usage") {
			t.Errorf("%v: code %d, output %q", args, code, out+stderr)
		}
	}
	if _, _, code := runCmd(t, "", "frobnicate"); code != cli.ExitUsage {
		t.Errorf("unknown command: %d", code)
	}
	if _, stderr, code := runCmd(t, "", "plan", "-o", "xml"); code != cli.ExitUsage || !strings.Contains(stderr, "xml") {
		t.Errorf("bad output: %d %q", code, stderr)
	}
	if _, stderr, code := runCmd(t, "", "plan", "-kubernetes-version", "2.0"); code != cli.ExitUsage || !strings.Contains(stderr, "2.0") {
		t.Errorf("bad version: %d %q", code, stderr)
	}
	// The adoption's flags: a review of it reads the live cluster; Ceph
	// access and the CephFS secret only with -adopt; a secret as
	// namespace/name.
	for args, want := range map[string]string{
		"rewrite -adopt -f -":                                  "needs -live",
		"rewrite -ceph-conf /etc/ceph/ceph.conf -f -":          "only with -adopt",
		"rewrite -apply -cephfs-secret ceph-csi/s":             "only with -adopt",
		"rewrite -apply -adopt -cephfs-secret csi-cephfs":      "want namespace/name",
		"rewrite -live -adopt -adopt-csi -o script":            "-adopt-csi only with -apply",
		"rewrite -live -adopt -dry-run -cephfs-secret ns/name": "-dry-run only with -apply",
		// A target is a PV's name or kubectl's TYPE/NAME of a PV or a
		// StorageClass.
		"rewrite -apply secret/s":  `"secret/s": want a PV's name, pv/NAME, pvc/NAMESPACE/NAME, namespace/NAME or storageclass/NAME`,
		"rewrite -apply pv/a sc/":  `"sc/": want a PV's name, pv/NAME, pvc/NAMESPACE/NAME, namespace/NAME or storageclass/NAME`,
		"rewrite -apply a/b/c":     `"a/b/c": want a PV's name, pv/NAME, pvc/NAMESPACE/NAME, namespace/NAME or storageclass/NAME`,
		"rewrite -apply pvc/app":   `"pvc/app": want a PV's name, pv/NAME, pvc/NAMESPACE/NAME, namespace/NAME or storageclass/NAME`,
		"rewrite -apply ns/Bad_NS": `"ns/Bad_NS": want a PV's name, pv/NAME, pvc/NAMESPACE/NAME, namespace/NAME or storageclass/NAME`,
	} {
		if _, stderr, code := runCmd(t, "", strings.Fields(args)...); code != cli.ExitUsage || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, %q; want a usage error saying %q", args, code, stderr, want)
		}
	}
}

// failingWriter fails every write, as a closed pipe or a full disk does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// Output that cannot be written ends every command that writes it with exit
// 4 and the cause, not with the exit code of bad input.
func TestOutputErrors(t *testing.T) {
	for _, args := range [][]string{
		{"plan", "-sample"}, {"plan", "-sample", "-o", "json"}, {"plan", "-sample", "-o", "yaml"},
		{"translate", "-sample"}, {"translate", "-sample", "-o", "json"},
		{"rewrite", "-sample"}, {"rewrite", "-sample", "-o", "yaml"},
	} {
		var stderr strings.Builder
		code := run(args, strings.NewReader(""), failingWriter{}, &stderr)
		if code != cli.ExitOutput || !strings.Contains(stderr.String(), "writing the output: no space left on device") {
			t.Errorf("%v: exit %d, want %d; stderr %q", args, code, cli.ExitOutput, stderr.String())
		}
	}
}

func TestInputErrors(t *testing.T) {
	_, stderr, code := runCmd(t, "kind: PersistentVolume\nspec: {rbd: 3}\n", "plan", "-f", "-")
	if code != cli.ExitInput || !strings.Contains(stderr, "<stdin>: document 1") {
		t.Errorf("%d %q", code, stderr)
	}
	_, _, code = runCmd(t, "", "plan", "-f", "testdata/does-not-exist")
	if code != cli.ExitInput {
		t.Errorf("missing file: %d", code)
	}
}

// Stdin, multi-document YAML and directories read the same objects.
func TestInputForms(t *testing.T) {
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	j, err := yaml.YAMLToJSON(input.Sample)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(j, &list); err != nil {
		t.Fatal(err)
	}
	var multi strings.Builder
	for _, it := range list.Items {
		y, _ := yaml.JSONToYAML(it)
		multi.WriteString("---\n")
		multi.Write(y)
	}
	want, _, _ := runCmd(t, "", "plan", "-sample", "-o", "json")
	got, stderr, _ := runCmd(t, multi.String(), "plan", "-o", "json", "-f", "-")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("multi-document stdin differs from the List (%s):\n%s", stderr, diff)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(multi.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _, _ = runCmd(t, "", "plan", "-o", "json", "-f", dir)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("directory input differs:\n%s", diff)
	}
}

// No command ever prints a secret value from the input.
func TestNoSecretValues(t *testing.T) {
	inv := &input.Inventory{}
	if err := (&input.Reader{Sink: inv}).ReadStream("sample", bytes.NewReader(input.Sample)); err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, s := range inv.Secrets {
		for _, v := range s.Data {
			values = append(values, string(v), base64.StdEncoding.EncodeToString(v))
		}
	}
	if len(values) == 0 {
		t.Fatal("the sample has no secrets")
	}
	for _, args := range [][]string{{"plan", "-sample"}, {"plan", "-sample", "-o", "json"}, {"plan", "-sample", "-o", "yaml"}, {"translate", "-sample"}, {"rewrite", "-sample"}, {"plan", "-sample", "-v"}} {
		out, stderr, _ := runCmd(t, "", args...)
		for _, v := range values {
			if strings.Contains(out+stderr, v) {
				t.Errorf("%v prints a secret value", args)
			}
		}
	}
}

// A config.json Ceph CSI runs with is accepted; its doubtful entries are
// hazards of the plan, and an unreadable one is a usage error naming the
// file.
func TestPlanCephConfigWarnings(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(`[{"clusterID":"fs-only","cephFS":{"subvolumeGroup":"csi"}},{"clusterID":"x","monitors":["10.0.0.1:6789"]},{"clusterID":"x","monitors":["10.0.0.2:6789"]}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runCmd(t, "", "plan", "-sample", "-ceph-config", cfg)
	if code != cli.ExitBlocked {
		t.Fatalf("exit %d (the sample blocks by design), stderr:\n%s", code, stderr)
	}
	for _, want := range []string{`entry 0: clusterID "fs-only" has no monitors`, `entry 2: clusterID "x" again, with monitors ["10.0.0.2:6789"] other than those of entry 1`} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan does not report %q:\n%s", want, out)
		}
	}
	if err := os.WriteFile(cfg, []byte(`{"clusterID":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCmd(t, "", "plan", "-sample", "-ceph-config", cfg); code != cli.ExitUsage || !strings.Contains(stderr, cfg) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// Input is read whole or refused: every YAML document marker, empty input,
// duplicates and invalid UTF-8.
func TestInputReadWholeOrRefused(t *testing.T) {
	pv := func(name string) string {
		return "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: " + name +
			"\nspec:\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  vsphereVolume: {volumePath: \"[ds] kubevols/" + name + ".vmdk\"}\n"
	}
	names := func(out string) []string {
		var p struct {
			Volumes []struct{ Name string } `json:"volumes"`
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var n []string
		for _, v := range p.Volumes {
			n = append(n, v.Name)
		}
		return n
	}
	for name, in := range map[string]string{
		"comment after ---":  pv("a") + "--- # the second\n" + pv("b"),
		"document end ...":   pv("a") + "...\n---\n" + pv("b"),
		"... then next":      pv("a") + "...\n" + pv("b"),
		"content after ---":  "--- " + strings.TrimSuffix(strings.SplitN(pv("a"), "\n", 2)[0], "\n") + "\n" + strings.SplitN(pv("a"), "\n", 2)[1] + "---\t\n" + pv("b"),
		"leading --- + CRLF": strings.ReplaceAll("---\n"+pv("a")+"---\n"+pv("b"), "\n", "\r\n"),
	} {
		out, stderr, code := runCmd(t, in, "plan", "-o", "json", "-f", "-", "-f", "testdata/drivers-upstream.yaml", "-f", "testdata/ceph-csi-manifests.yaml")
		if code != cli.ExitOK {
			t.Errorf("%s: exit %d: %s", name, code, stderr)
			continue
		}
		if diff := cmp.Diff([]string{"a", "b"}, names(out)); diff != "" {
			t.Errorf("%s: volumes (-want +got):\n%s", name, diff)
		}
	}
	for name, tc := range map[string]struct{ in, want string }{
		"empty":             {"", "no objects in the input"},
		"only separators":   {"---\n---\n# nothing\n", "no objects in the input"},
		"empty JSON list":   {`{"apiVersion":"v1","kind":"List","items":[]}`, "no objects in the input"},
		"duplicate":         {pv("a") + "---\n" + pv("a"), `PersistentVolume a appears twice`},
		"duplicate in JSON": {`{"kind":"List","items":[{"kind":"PersistentVolume","metadata":{"name":"a"}},{"kind":"PersistentVolume","metadata":{"name":"a"}}]}`, "items[1]: PersistentVolume a appears twice"},
		"invalid UTF-8 in JSON": {`{"kind":"List","items":[{"kind":"PersistentVolume","metadata":{"name":"a","annotations":{"x":"` + "\xff" + `"}}}]}`,
			"invalid UTF-8"},
		"invalid UTF-8 in YAML": {pv("a") + "---\n" + strings.Replace(pv("b"), "name: b", "name: b\n  annotations: {x: \"\xfe\"}", 1), "document 2: invalid UTF-8"},
		"content after ...":     {pv("a") + "... junk\n", `content "junk" after the document end marker`},
	} {
		_, stderr, code := runCmd(t, tc.in, "plan", "-f", "-")
		if code != cli.ExitInput || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "<stdin>") && name != "empty" && name != "only separators" && name != "empty JSON list" {
			t.Errorf("%s: exit %d, want %d and %q: %s", name, code, cli.ExitInput, tc.want, stderr)
		}
	}
}

// A YAML List is streamed item by item in kubectl's shape and read whole in
// any other; both give the same objects.
func TestYAMLListShapes(t *testing.T) {
	item := func(name string) string {
		return "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: " + name +
			"\n  annotations:\n    note: |\n      two\n      lines\nspec:\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  vsphereVolume: {volumePath: \"[ds] kubevols/" + name + ".vmdk\"}\n"
	}
	indent := func(s, first, rest string) string {
		lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
		for i := range lines {
			if i == 0 {
				lines[i] = first + lines[i]
			} else {
				lines[i] = rest + lines[i]
			}
		}
		return strings.Join(lines, "\n") + "\n"
	}
	kubectl := "apiVersion: v1\nitems:\n# the first\n" + indent(item("a"), "- ", "  ") + "\n  # inside\n" + indent(item("b"), "- ", "  ") + "kind: List\nmetadata:\n  resourceVersion: \"\"\n"
	indented := "apiVersion: v1\nkind: List\nitems:\n" + indent(item("a"), "  - ", "    ") + indent(item("b"), "  - ", "    ")
	want, _, _ := runCmd(t, "---\n"+item("a")+"---\n"+item("b"), "plan", "-o", "json", "-f", "-", "-f", "testdata/drivers-upstream.yaml", "-f", "testdata/ceph-csi-manifests.yaml")
	for name, in := range map[string]string{"kubectl": kubectl, "indented": indented, "kubectl, CRLF": strings.ReplaceAll(kubectl, "\n", "\r\n")} {
		got, stderr, code := runCmd(t, in, "plan", "-o", "json", "-f", "-", "-f", "testdata/drivers-upstream.yaml", "-f", "testdata/ceph-csi-manifests.yaml")
		if code != cli.ExitOK {
			t.Errorf("%s: exit %d: %s", name, code, stderr)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: (-documents +list):\n%s", name, diff)
		}
	}
	for name, tc := range map[string]struct{ in, want string }{
		"not a List": {"apiVersion: v1\nkind: Thing\nitems:\n" + indent(item("a"), "- ", "  "), `kind "Thing", not a List`},
		"bad indent": {"apiVersion: v1\nkind: List\nitems:\n" + indent(item("a"), "- ", "  ") + " x: 1\n", "indented less than the list's entries"},
		"bad item":   {"apiVersion: v1\nkind: List\nitems:\n- just a string\n", "items[0]"},
	} {
		_, stderr, code := runCmd(t, tc.in, "plan", "-f", "-")
		if code != cli.ExitInput || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, want %d and %q: %s", name, code, cli.ExitInput, tc.want, stderr)
		}
	}
}

// rewrite reads its input more than once; from standard input (kept in a
// temporary file meanwhile) it prints what it prints from the file.
func TestRewriteFromStdin(t *testing.T) {
	dump, err := os.ReadFile("testdata/dump.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{"script", "yaml"} {
		want, _, wantCode := runCmd(t, "", "rewrite", "-o", out, "-f", "testdata/dump.json")
		got, stderr, code := runCmd(t, string(dump), "rewrite", "-o", out, "-f", "-")
		// The record names the input as given: the file, or "-".
		want = strings.Replace(want, `"-f=testdata/dump.json"`, `"-f=-"`, 1)
		if code != wantCode || got != want {
			t.Errorf("-o %s: exit %d (file: %d), %s\n%s", out, code, wantCode, stderr, cmp.Diff(want, got))
		}
		if !strings.Contains(got, "rbd.csi.ceph.com") {
			t.Errorf("-o %s: no replacement printed:\n%s", out, got)
		}
	}
}

// The default plan reads in a terminal: the tables have short columns and
// their long texts follow them, wrapped, so that no line but the Ceph CSI
// config map's config.json (kept as kubectl apply takes it) is wider than
// 140 columns; -o wide puts the texts in the tables, as before.
func TestPlanTableWidth(t *testing.T) {
	out, _, _ := runCmd(t, "", "plan", "-sample")
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 140 && !strings.HasPrefix(line, "  config.json: ") {
			t.Errorf("a line of %d columns: %s", len(line), line)
		}
	}
	wide, _, _ := runCmd(t, "", "plan", "-sample", "-o", "wide")
	if !strings.Contains(wide, "\tREMEDY") && !strings.Contains(wide, "  REMEDY") {
		t.Errorf("-o wide has no REMEDY column:\n%s", wide)
	}
}

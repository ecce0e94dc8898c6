package vspheretest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// documentedCalls are the vCenter API calls docs/prerequisites.md lists in
// the fenced block that follows the line naming what (a line ending in
// "(calls: what)"): "ENDPOINT-PATH METHOD" each.
func documentedCalls(t *testing.T, what string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "prerequisites.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "(calls: "+what+")")
	if !ok {
		t.Errorf("docs/prerequisites.md lists no calls of %s", what)
		return nil
	}
	_, block, _ := strings.Cut(rest, "```text\n")
	block, _, _ = strings.Cut(block, "```")
	var out []string
	for line := range strings.SplitSeq(strings.TrimSpace(block), "\n") {
		out = append(out, strings.TrimSpace(line))
	}
	slices.Sort(out)
	return out
}

// The vCenter calls that plan -read-vsphere and rewrite -apply -adopt make
// (as vcsim sees them, by csimigrate's User-Agent) are exactly those
// docs/prerequisites.md lists for the vCenter user: a new call fails here
// until the page names it.
func TestVSphereCallsAsDocumented(t *testing.T) {
	vc, srv, _ := startPeers(t)
	kc, err := srv.WriteKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	path := "[LocalDS_0] kubevols/kubernetes-dynamic-pvc-6a1e2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b.vmdk"
	createInTreePV(t, vc, srv.Client, "pvc-6a1e2b3c", path, existingPolicy)
	conf := confFile(t, vc, vc.Password)
	if code, out, stderr := csimigrate(t, "plan", "-live", "-kubeconfig", kc, "-read-vsphere", "-vsphere-conf", conf); code > 1 {
		t.Fatalf("plan -read-vsphere: exit %d\n%s\n%s", code, out, stderr)
	}
	planCalls := vc.Calls(t)
	t.Logf("plan -read-vsphere's calls:\n%s", strings.Join(planCalls, "\n"))
	if diff := cmp.Diff(documentedCalls(t, "plan -read-vsphere"), planCalls); diff != "" {
		t.Errorf("plan -read-vsphere's calls (-documented +made):\n%s", diff)
	}
	if code, out, stderr := csimigrate(t, "rewrite", "-apply", "-adopt", "-vsphere-conf", conf, "-kubeconfig", kc, "pvc-6a1e2b3c"); code != 0 {
		t.Fatalf("rewrite -apply -adopt: exit %d\n%s\n%s", code, out, stderr)
	}
	var adoptCalls []string
	for _, c := range vc.Calls(t) {
		if !slices.Contains(planCalls, c) {
			adoptCalls = append(adoptCalls, c)
		}
	}
	t.Logf("rewrite -apply -adopt's calls beyond the plan's:\n%s", strings.Join(adoptCalls, "\n"))
	if diff := cmp.Diff(documentedCalls(t, "what -adopt adds"), adoptCalls); diff != "" {
		t.Errorf("rewrite -apply -adopt's calls beyond the plan's (-documented +made):\n%s", diff)
	}
}

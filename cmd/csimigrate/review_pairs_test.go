package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/rewritecmd"
)

// reviewLine and applyLine are a review and the apply of it, as the docs
// give them.
var (
	reviewLine = regexp.MustCompile(`^kubectl csimigrate rewrite (.*?) > review\.sh`)
	applyLine  = regexp.MustCompile(`^kubectl csimigrate rewrite -apply -review review\.sh (.*?)(\s+#.*)?$`)
)

// docPairs are the review and apply pairs of a page's code blocks, in
// order, as their arguments.
func docPairs(t *testing.T, path string) [][2][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pairs [][2][]string
	var review []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "```") {
			in = !in
			continue
		}
		if !in {
			continue
		}
		if m := reviewLine.FindStringSubmatch(line); m != nil {
			review = strings.Fields(m[1])
			continue
		}
		if strings.HasPrefix(line, "kubectl csimigrate rewrite -apply") && !strings.Contains(line, "-undo") {
			m := applyLine.FindStringSubmatch(line)
			if m == nil || review == nil {
				t.Errorf("%s: %q applies without the review before it (rewrite ... > review.sh, then rewrite -apply -review review.sh ...)", path, line)
				continue
			}
			pairs = append(pairs, [2][]string{review, strings.Fields(m[1])})
			review = nil
		}
	}
	return pairs
}

// Every review and apply pair of the pages an admin follows (README.md,
// docs/upgrade.md, docs/rescue.md) gives the apply the review's options
// and targets, and nothing else but -apply's own flags: one form. Then
// the README's pair runs on a cluster: the apply rewrites what the review
// has steps for and refuses what it refuses, with the same codes; run
// again with the same review it finds them done; a run with another
// option, or after an object changed, is refused before its first write,
// naming the difference.
func TestDocsReviewApplyPairs(t *testing.T) {
	fs := cli.NewFlagSet("rewrite", "", io.Discard)
	rewritecmd.New().Register(fs)
	applyFlags := rewritecmd.ApplyFlags()
	applyOnly := func(args []string) []string {
		var out []string
		for i := 0; i < len(args); i++ {
			name := strings.TrimLeft(args[i], "-")
			if strings.HasPrefix(args[i], "-") && applyFlags[name] {
				if f := fs.Lookup(name); f != nil && !isBool(f) && !strings.Contains(name, "=") {
					i++
				}
				continue
			}
			out = append(out, args[i])
		}
		return out
	}
	n := 0
	for _, page := range []string{"../../README.md", "../../docs/upgrade.md", "../../docs/rescue.md"} {
		pairs := docPairs(t, page)
		if len(pairs) == 0 {
			t.Errorf("%s has no review and apply pair", page)
		}
		for _, p := range pairs {
			n++
			if got := applyOnly(p[1]); !slices.Equal(got, p[0]) {
				t.Errorf("%s: the apply takes %q, the review %q: not the same run", page, got, p[0])
			}
		}
	}
	if n < 3 {
		t.Fatalf("%d pairs in the pages", n)
	}

	// The README's pair, on a cluster.
	c, kc := startServer(t)
	ctx := context.Background()
	testenv.Seed(t, c, "pair")
	if err := testenv.SetCephCSIConfig(ctx, c, []byte(testenv.CephCSIConfig)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dump, stderr, code := runCmd(t, "", "dump", "-kubeconfig", kc)
	if code != cli.ExitOK {
		t.Fatalf("dump: %d %s", code, stderr)
	}
	cluster, reviewFile := filepath.Join(dir, "cluster.json"), filepath.Join(dir, "review.sh")
	if err := os.WriteFile(cluster, []byte(dump), 0o600); err != nil {
		t.Fatal(err)
	}
	review, stderr, code := runCmd(t, "", "rewrite", "-f", cluster)
	if code != cli.ExitOK && code != cli.ExitBlocked {
		t.Fatalf("review: %d %s", code, stderr)
	}
	if err := os.WriteFile(reviewFile, []byte(review), 0o600); err != nil {
		t.Fatal(err)
	}
	steps := regexp.MustCompile(`(?m)^rewrite_(pv|sc) (\S+) `).FindAllStringSubmatch(review, -1)
	if len(steps) == 0 {
		t.Fatalf("the review has no steps:\n%s", review)
	}
	// Another option than the review's: refused, nothing written.
	before := snapshotObjects(t, c)
	out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-review", reviewFile, "-online", "-f", cluster, "-kubeconfig", kc)
	if code != cli.ExitUsage || !strings.Contains(stderr, "option -online=true: in this run, not in the review") {
		t.Errorf("apply with another option: exit %d\n%s\n%s", code, out, stderr)
	}
	// An object changed since the review: refused, nothing written.
	pv, err := c.CoreV1().PersistentVolumes().Get(ctx, steps[0][2], metav1.GetOptions{})
	if steps[0][1] == "pv" && err == nil {
		pv.Labels = map[string]string{"changed": "after-the-review"}
		if _, err := c.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		out, stderr, code = runCmd(t, "", "rewrite", "-apply", "-review", reviewFile, "-f", cluster, "-kubeconfig", kc)
		if code != cli.ExitBlocked || !strings.Contains(stderr, "pv/"+pv.Name+": changed since the review") {
			t.Errorf("apply after a change: exit %d\n%s\n%s", code, out, stderr)
		}
		after := snapshotObjects(t, c)
		for k, v := range before {
			if k != "pv/"+pv.Name && after[k] != v {
				t.Errorf("%s changed by a refused run: %s, was %s", k, after[k], v)
			}
		}
		// Reviewed again, as the refusal says.
		if dump, _, _ = runCmd(t, "", "dump", "-kubeconfig", kc); os.WriteFile(cluster, []byte(dump), 0o600) != nil {
			t.Fatal("writing the dump")
		}
		review, _, _ = runCmd(t, "", "rewrite", "-f", cluster)
		if err := os.WriteFile(reviewFile, []byte(review), 0o600); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Fatalf("the review's first step is not a PV's: %v %v", steps[0], err)
	}
	// The README's apply: what the review has steps for is rewritten, what
	// it refuses is refused with the same codes.
	out, stderr, code = runCmd(t, "", "rewrite", "-apply", "-review", reviewFile, "-f", cluster, "-kubeconfig", kc)
	if code != cli.ExitOK && code != cli.ExitBlocked {
		t.Fatalf("apply of the review: exit %d\n%s\n%s", code, out, stderr)
	}
	if diff := cmpVerdicts(refusedIn(review), refusedIn(out)); diff != "" {
		t.Errorf("refusals of the apply and of the review differ: %s\n%s\n%s", diff, review, out)
	}
	after := snapshotObjects(t, c)
	for _, s := range steps {
		key := map[string]string{"pv": "pv/", "sc": "storageclass/"}[s[1]] + s[2]
		if after[key] == before[key] || strings.HasSuffix(after[key], " kubernetes.io/rbd") {
			t.Errorf("%s, which the review has steps for, is not rewritten: %s", key, after[key])
		}
	}
	// Run again with the same review (-o json: a result per object):
	// what it rewrote is unchanged now, what it refused is refused again.
	out2, stderr, code := runCmd(t, "", "rewrite", "-apply", "-review", reviewFile, "-f", cluster, "-kubeconfig", kc, "-o", "json")
	if code != cli.ExitOK && code != cli.ExitBlocked || strings.Contains(stderr, "since the review") {
		t.Fatalf("the same apply again: exit %d\n%s\n%s", code, out2, stderr)
	}
	var rep rewritecmd.ApplyReport
	if err := json.Unmarshal([]byte(out2), &rep); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out2)
	}
	got := map[string]string{}
	for _, r := range rep.Results {
		got[r.Object] = r.Result + " " + strings.Join(r.Codes, ", ")
	}
	want := map[string]string{}
	for obj, codes := range refusedIn(review) {
		want[obj] = "refused " + codes
	}
	for _, s := range steps {
		want[map[string]string{"pv": "pv/", "sc": "storageclass/"}[s[1]]+s[2]] = "unchanged "
	}
	if diff := cmpVerdicts(want, got); diff != "" {
		t.Errorf("-o json results: %s\n%s", diff, out2)
	}
}

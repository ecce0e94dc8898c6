package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
)

// __complete answers as cobra's commands do: the subcommands, a command's
// flags, -o's formats, rewrite's target kinds, file names after -f.
func TestComplete(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pl"}, "plan\n:4\n"},
		{[]string{"plan", "-o", "j"}, "json\n:4\n"},
		{[]string{"rewrite", "-ap"}, "-apply\n:4\n"},
		{[]string{"rewrite", "-apply", "pvc"}, "pvc/\n:4\n"},
		{[]string{"plan", "-f", ""}, ":0\n"},
		{[]string{"completion", "z"}, "zsh\n:4\n"},
		{[]string{"nosuch", "-"}, ":4\n"},
	} {
		var b bytes.Buffer
		complete(tc.args, &b)
		if b.String() != tc.want {
			t.Errorf("__complete %q: %q, want %q", tc.args, b.String(), tc.want)
		}
	}
}

// The bash script completes through the binary, as bash runs it; kubectl's
// plugin completion (Debian's kubectl) runs kubectl_complete-csimigrate,
// which asks the plugin.
func TestCompletionScripts(t *testing.T) {
	bin := commandBinary(t)
	script := filepath.Join(t.TempDir(), "c.bash")
	out, _, code := runCmd(t, "", "completion", "bash")
	if code != cli.ExitOK {
		t.Fatalf("completion bash: exit %d", code)
	}
	if err := os.WriteFile(script, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := exec.Command("bash", "-c", `source "$1"; COMP_WORDS=("$2" rewrite -ap); COMP_CWORD=2; _csimigrate; echo "${COMPREPLY[*]}"`, "bash", script, bin).CombinedOutput()
	if err != nil || strings.TrimSpace(string(got)) != "-apply" {
		t.Errorf("bash completion of csimigrate rewrite -ap: %q, %v", got, err)
	}
	if _, _, code := runCmd(t, "", "completion", "fish"); code != cli.ExitUsage {
		t.Errorf("completion fish: exit %d, want %d", code, cli.ExitUsage)
	}

	path := kubectlPlugin(t)
	dir := strings.SplitN(path, string(os.PathListSeparator), 2)[0]
	src, err := os.ReadFile("kubectl_complete-csimigrate")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubectl_complete-csimigrate"), src, 0o755); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runPath(t, path, "kubectl", "__complete", "csimigrate", "rew")
	if code != 0 || !strings.HasPrefix(stdout, "rewrite\n") {
		t.Errorf("kubectl __complete csimigrate rew: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

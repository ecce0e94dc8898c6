package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
)

// Shell completion: `csimigrate completion bash|zsh` prints a script that
// completes csimigrate and kubectl-csimigrate, and `csimigrate __complete
// ARGS... WORD` answers as cobra's commands do (kubectl runs
// kubectl_complete-csimigrate, which runs it, for `kubectl csimigrate
// <TAB>`): one candidate a line, then ":DIRECTIVE".

// The directives of cobra's protocol that the answers use.
const (
	compDefault    = 0 // complete file names too
	compNoFileComp = 4 // no file names
)

// subcommands are the commands completion offers.
var subcommands = []string{"plan", "dump", "translate", "rewrite", "clusterid", "controller", "version", "completion"}

// commandFlags registers a command's flags into a flag set of its own.
func commandFlags(name string) *flag.FlagSet {
	c, ok := commandNamed(name)
	if !ok {
		return nil
	}
	fs := cli.NewFlagSet(name, "", io.Discard)
	c.options().Register(fs)
	return fs
}

// flagValues are the values completion offers for a flag ("" : a file name).
var flagValues = map[string][]string{
	"kubernetes-version": {"1.30", "1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37", "1.38"},
}

// complete answers a completion request: args are the words after the
// program's name, the last one the word being completed ("" for a new
// one).
func complete(args []string, w io.Writer) {
	directive := compNoFileComp
	var out []string
	defer func() {
		for _, c := range out {
			fmt.Fprintln(w, c)
		}
		fmt.Fprintf(w, ":%d\n", directive)
	}()
	if len(args) == 0 {
		args = []string{""}
	}
	word := args[len(args)-1]
	if len(args) == 1 {
		for _, c := range subcommands {
			if strings.HasPrefix(c, word) {
				out = append(out, c)
			}
		}
		return
	}
	cmd := args[0]
	if cmd == "completion" {
		if len(args) == 2 {
			out = slices.DeleteFunc([]string{"bash", "zsh"}, func(s string) bool { return !strings.HasPrefix(s, word) })
		}
		return
	}
	fs := commandFlags(cmd)
	if fs == nil {
		return
	}
	// The value of the flag before the word.
	if prev := args[len(args)-2]; strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") {
		if f := fs.Lookup(strings.TrimLeft(prev, "-")); f != nil && !isBool(f) {
			switch {
			case f.Name == "o":
				out = filterPrefix(outputFormats(fs), word)
			case flagValues[f.Name] != nil:
				out = filterPrefix(flagValues[f.Name], word)
			case cli.Placeholders[f.Name] == "FILE":
				directive = compDefault
			}
			return
		}
	}
	if strings.HasPrefix(word, "-") {
		fs.VisitAll(func(f *flag.Flag) {
			if c := "-" + f.Name; strings.HasPrefix(c, word) {
				out = append(out, c)
			}
		})
		return
	}
	if cmd == "rewrite" {
		out = filterPrefix([]string{"pv/", "pvc/", "namespace/", "storageclass/"}, word)
	}
}

// isBool reports whether a flag takes no value (-v alone, -apply).
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// outputFormats are what -o accepts, read from its usage ("output
// format: a|b|c").
func outputFormats(fs *flag.FlagSet) []string {
	f := fs.Lookup("o")
	if f == nil {
		return nil
	}
	_, list, _ := strings.Cut(f.Usage, ": ")
	return strings.Split(list, "|")
}

func filterPrefix(list []string, prefix string) []string {
	var out []string
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// completionScripts are the scripts of `csimigrate completion SHELL`: they
// complete csimigrate and kubectl-csimigrate through __complete.
var completionScripts = map[string]string{
	"bash": `# csimigrate completion for bash: source <(csimigrate completion bash)
_csimigrate() {
  local prog=${COMP_WORDS[0]} out directive
  out=$("$prog" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return
  directive=${out##*:}
  out=${out%:*}
  COMPREPLY=($(compgen -W "$out" -- "${COMP_WORDS[COMP_CWORD]}"))
  if [ "$directive" = 0 ] && [ ${#COMPREPLY[@]} -eq 0 ]; then
    COMPREPLY=($(compgen -f -- "${COMP_WORDS[COMP_CWORD]}"))
  fi
}
complete -F _csimigrate csimigrate kubectl-csimigrate
`,
	"zsh": `#compdef csimigrate kubectl-csimigrate
# csimigrate completion for zsh: source <(csimigrate completion zsh)
_csimigrate() {
  local -a lines
  lines=("${(@f)$("${words[1]}" __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  local directive=${lines[-1]#:}
  lines=("${(@)lines[1,-2]}")
  if [ ${#lines} -gt 0 ]; then
    compadd -- "${lines[@]}"
  elif [ "$directive" = 0 ]; then
    _files
  fi
}
compdef _csimigrate csimigrate kubectl-csimigrate
`,
}

// runCompletion prints the completion script of a shell.
func runCompletion(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || completionScripts[args[0]] == "" {
		fmt.Fprintf(stderr, "csimigrate completion: want bash or zsh (source <(csimigrate completion bash)); kubectl's plugin completion runs kubectl_complete-csimigrate (cmd/csimigrate/kubectl_complete-csimigrate)\n")
		return cli.ExitUsage
	}
	fmt.Fprint(stdout, completionScripts[args[0]])
	return cli.ExitOK
}

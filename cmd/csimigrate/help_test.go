package main

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
)

// Every flag a command's help names is one of its own flags, unless the
// help names it as another command's ("rewrite -apply -adopt") or in a quoted example.
func TestHelpNamesOnlyOwnFlags(t *testing.T) {
	commands := []string{"plan", "translate", "rewrite", "clusterid", "controller", "dump"}
	flagLine := regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`)
	for _, cmd := range commands {
		var stdout, stderr bytes.Buffer
		if code := run([]string{cmd, "-h"}, nil, &stdout, &stderr); code != cli.ExitOK {
			t.Fatalf("%s -h: exit %d", cmd, code)
		}
		help := stdout.String()
		var own []string
		for _, m := range flagLine.FindAllStringSubmatch(help, -1) {
			own = append(own, m[1])
		}
		if len(own) == 0 {
			t.Fatalf("%s -h lists no flags:\n%s", cmd, help)
		}
		// Quoted examples are other programs' command lines (wrapped, a quote
		// may span lines).
		help = regexp.MustCompile(`"[^"]*"`).ReplaceAllString(help, "")
		other := false
		for _, tok := range strings.FieldsFunc(help, func(r rune) bool { return strings.ContainsRune(" \t\n,;:()`\"", r) }) {
			switch {
			case slices.Contains(commands, tok):
				other = true // flags after a command name are that command's
			case strings.HasPrefix(tok, "-") && len(tok) > 1 && tok[1] != '-' && tok[1] != '>':
				name := strings.TrimRight(strings.TrimPrefix(tok, "-"), ".'")
				if !other && !slices.Contains(own, name) && regexp.MustCompile(`^[a-z][a-z0-9-]*$`).MatchString(name) {
					t.Errorf("%s -h names -%s, which %s does not have", cmd, name, cmd)
				}
			default:
				other = false
			}
		}
	}
}

// Every line of every command's help fits a terminal of cli.HelpWidth columns.
func TestHelpFitsTerminal(t *testing.T) {
	for _, cmd := range []string{"plan", "translate", "rewrite", "clusterid", "controller", "dump"} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{cmd, "-h"}, nil, &stdout, &stderr); code != cli.ExitOK {
			t.Fatalf("%s -h: exit %d", cmd, code)
		}
		for i, line := range strings.Split(stdout.String(), "\n") {
			if len(line) > cli.HelpWidth && strings.Contains(strings.TrimSpace(line), " ") {
				t.Errorf("%s -h, line %d: %d columns, over %d: %q", cmd, i+1, len(line), cli.HelpWidth, line)
			}
		}
	}
}

// Each command's help, as kubectl plugins give it, on standard output:
// first a usage line with named placeholders, then examples, then its
// flags in groups; no flag's value is a bare "value".
func TestHelpAsKubectlPlugins(t *testing.T) {
	for _, cmd := range []string{"plan", "translate", "rewrite", "clusterid", "controller", "dump"} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{cmd, "-h"}, nil, &stdout, &stderr); code != cli.ExitOK {
			t.Fatalf("%s -h: exit %d", cmd, code)
		}
		help := stdout.String()
		if !strings.HasPrefix(help, "Usage:\n  csimigrate "+cmd+" ") || stderr.Len() != 0 {
			t.Errorf("%s -h does not start with its usage line on stdout: %q (stderr %q)", cmd, help[:min(len(help), 80)], stderr.String())
		}
		if i, j := strings.Index(help, "\nExamples:\n"), strings.Index(help, " flags:\n"); i < 0 || j < i {
			t.Errorf("%s -h: no examples before the flags:\n%s", cmd, help)
		}
		if regexp.MustCompile(`(?m)^  -[a-zA-Z-]+ value$`).MatchString(help) {
			t.Errorf("%s -h shows a placeholder as \"value\":\n%s", cmd, help)
		}
	}
	// A usage error names the help on stderr.
	var stdout, stderr bytes.Buffer
	if code := run([]string{"plan", "-nosuchflag"}, nil, &stdout, &stderr); code != cli.ExitUsage || !strings.Contains(stderr.String(), "csimigrate plan -h") {
		t.Errorf("plan -nosuchflag: exit %d, %q", code, stderr.String())
	}
}

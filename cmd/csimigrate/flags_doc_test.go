package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
)

// flagReference is docs/flags.md, generated from the commands' own flag
// sets: the reference cannot drift from the flags.
const flagReference = "../../docs/flags.md"

// flagDoc renders every command's flags as the reference's Markdown.
func flagDoc() string {
	var b strings.Builder
	b.WriteString("# Flags\n\nGenerated from the commands' flag sets (`go test ./cmd/csimigrate -run TestFlagReference -update`\n" +
		"rewrites it). Every flag takes one dash or two. What the commands do: [command.md](command.md).\n")
	for _, c := range commands {
		fs := cli.NewFlagSet(c.name, c.summary, io.Discard)
		c.options().Register(fs)
		fmt.Fprintf(&b, "\n## csimigrate %s\n\n%s\n\n| flag | default | meaning |\n| --- | --- | --- |\n", c.name, strings.ReplaceAll(c.summary, "\n", " "))
		fs.VisitAll(func(f *flag.Flag) {
			a, usage := cli.FlagArg(f)
			arg := "`" + a
			def := ""
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" {
				def = "`" + f.DefValue + "`"
			}
			fmt.Fprintf(&b, "| %s` | %s | %s |\n", arg, def, strings.ReplaceAll(strings.ReplaceAll(usage, "\n", " "), "|", "\\|"))
		})
	}
	b.WriteString("\n## csimigrate version\n\nPrints the version, the commit and the Go version the binary was built with. No flags.\n")
	return b.String()
}

func TestFlagReference(t *testing.T) {
	want := flagDoc()
	if *update {
		if err := os.WriteFile(flagReference, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(flagReference)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("%s is not what the flag sets say (-want +file; go test -run TestFlagReference -update rewrites it):\n%s", flagReference, diff)
	}
}

package cli

import (
	"flag"
	"io"
)

// Exit codes, as the package documentation and docs/command.md state them.
const (
	ExitOK      = 0
	ExitBlocked = 1
	ExitUsage   = 2
	ExitInput   = 3
	ExitOutput  = 4
)

// NewFlagSet is a subcommand's flag set: its errors are returned, not
// printed, and -h is left to RunCommand, which writes the help.
func NewFlagSet(name, summary string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("csimigrate "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	// -h writes the help, a usage error names it (RunCommand).
	fs.Usage = func() {}
	return fs
}

// HelpWidth is the width help text is wrapped to, so that it fits a
// terminal.
const HelpWidth = 100

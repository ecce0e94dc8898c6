// Command csimigrate plans and performs the move of a cluster's in-tree RBD,
// CephFS and vSphere volumes to their CSI drivers.
//
//	csimigrate [command] [flags]
//
// Commands:
//
//	plan       report per volume what migration needs (default command)
//	translate  print the CSI equivalents of the input objects
//	rewrite    print the ordered, idempotent steps that replace each in-tree PV
//	           by a CSI PV of the same name
//	clusterid  print the Ceph CSI clusterID of a monitor list
//	controller run the migration in the cluster, continuously, as the
//	           leader of its replicas (deploy/base and its overlays)
//	version    print the version, commit and Go version of the binary
//
// Input is what `csimigrate dump` writes (the cluster's objects, Secret
// values left out), or manifests as `kubectl get pv,pvc,sc,pods -A -o yaml`
// prints them, from files, directories or "-" (stdin), given with
// -f, or a live cluster: without -f, the cluster of the current kubeconfig
// context, as kubectl reads it. -sample (and the command with no arguments
// at all) runs on an embedded sample cluster, and says so.
//
// Exit codes: 0 success; 1 something blocks (plan) or an object failed to
// translate or rewrite; 2 usage error; 3 unreadable input; 4 the output could
// not be written.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/clusteridcmd"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/controllercmd"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/dumpcmd"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/plancmd"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/rewritecmd"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/translatecmd"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `csimigrate moves in-tree RBD, CephFS and vSphere volumes to their CSI drivers.

Usage:
  csimigrate [command] [flags]

Commands:
  plan       report per volume what migration needs (default)
  dump       write what plan -f and rewrite -f read from a cluster, Secret values left out
  translate  print the CSI equivalents of the input objects
  rewrite    print the ordered, idempotent steps that replace each in-tree PV by a CSI PV
  clusterid  print the Ceph CSI clusterID of a monitor list
  controller run the migration in the cluster (deploy/base, deploy/overlays)
  version    print the version, the commit and the Go version it was built with
  completion print a completion script: bash or zsh (source <(csimigrate completion bash))

Run "csimigrate <command> -h" for a command's flags. Without -f a command
reads the cluster of the current kubeconfig context, as kubectl does;
-sample (or csimigrate with no arguments) reads an embedded sample cluster.
`

// A command is one of the subcommands with options: its name, its summary,
// its options (for their flags: completion, the flag reference) and how it
// runs.
type command struct {
	name, summary string
	options       func() cli.Command
	run           func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands are the subcommands with options, in the order the flag
// reference gives them; each is a package under internal/.
var commands = []command{
	{"plan", plancmd.Summary, plancmd.New, plancmd.Run},
	{"translate", translatecmd.Summary, translatecmd.New, translatecmd.Run},
	{"rewrite", rewritecmd.Summary, rewritecmd.New, rewritecmd.Run},
	{"controller", controllercmd.Summary, controllercmd.New, func(args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return controllercmd.Run(args, stdout, stderr, cli.ReadBuildInfo(version, commit))
	}},
	{"clusterid", clusteridcmd.Summary, clusteridcmd.New, func(args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return clusteridcmd.Run(args, stdout, stderr)
	}},
	{"dump", dumpcmd.Summary, dumpcmd.New, func(args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return dumpcmd.Run(args, stdout, stderr)
	}},
}

// commandNamed is the subcommand with options of that name.
func commandNamed(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := "plan"
	if len(args) == 0 {
		// The README's first command: the plan of the embedded sample,
		// which says so.
		args = []string{"-sample"}
	} else if !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	} else if args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		fmt.Fprint(stdout, usage)
		return cli.ExitOK
	}
	if c, ok := commandNamed(cmd); ok {
		return c.run(args, stdin, stdout, stderr)
	}
	switch cmd {
	case "version":
		return runVersion(args, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, usage)
		return cli.ExitOK
	case "completion":
		return runCompletion(args, stdout, stderr)
	case "__complete":
		complete(args, stdout)
		return cli.ExitOK
	}
	fmt.Fprintf(stderr, "csimigrate: unknown command %q\n\n%s", cmd, usage)
	return cli.ExitUsage
}

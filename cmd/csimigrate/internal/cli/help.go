package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/output"
)

// A command's help, as kubectl plugins give it: a usage line with named
// Placeholders, a few examples, then the flags in groups.

// usageLines are each command's usage line, after "csimigrate".
var usageLines = map[string]string{
	"plan":      "plan [-f FILE | -sample] [-n NAMESPACE | -A] [-o table|wide|json|yaml|ceph-csi] [flags]",
	"translate": "translate [-f FILE | -sample] [-o yaml|json] [flags]",
	"rewrite": "rewrite [-f FILE] [-undo] [-online] [-apply [-dry-run] [-adopt]] [TARGET ...] [flags]\n\n" +
		"TARGET: a PV's name, pv/NAME, pvc/NAMESPACE/NAME (the PV bound to it), namespace/NAME (the PVs of\n" +
		"its claims) or storageclass/NAME; none: every one in scope. The review takes -apply's targets.",
	"controller": "controller [-pv-selector SELECTOR] [-dry-run] [-adopt] [flags]",
	"clusterid":  "clusterid -monitors HOST:PORT,... [flags]",
	"dump":       "dump [-n NAMESPACE | -A] [flags] > cluster.json",
}

// examples are each command's examples, as an admin types them.
var examples = map[string][]string{
	"plan": {
		"kubectl csimigrate plan                          # the cluster of the current context",
		"kubectl csimigrate plan -f cluster.json          # a dump (csimigrate dump > cluster.json)",
		"kubectl csimigrate plan -n app -o wide           # the claims of one namespace, every reason",
		"kubectl csimigrate plan -o ceph-csi | kubectl apply -f -   # the Ceph CSI cluster entries it lacks",
	},
	"translate": {
		"kubectl csimigrate translate -f cluster.json     # the CSI PVs, classes and moved pods",
	},
	"rewrite": {
		"kubectl csimigrate rewrite pvc/app/orders-db > review.sh     # the steps, for review",
		"kubectl csimigrate rewrite -apply pvc/app/orders-db          # what was reviewed",
		"kubectl csimigrate rewrite -apply -dry-run namespace/app     # the API server's dry run",
		"kubectl csimigrate rewrite -apply -undo PV                   # back, while 1.30 has the plugin",
	},
	"controller": {
		"csimigrate controller -dry-run -state-namespace kube-system  # what it would do: status, Events",
	},
	"clusterid": {
		"csimigrate clusterid -monitors 10.0.0.1:6789,10.0.0.2:6789",
	},
	"dump": {
		"kubectl csimigrate dump > cluster.json",
		"kubectl csimigrate dump -n app > app.json",
	},
}

// flagGroups orders the groups of the help; flagGroup says which group a
// flag is in ("other" for any it does not name).
var flagGroups = []string{"input", "scope", "adoption", "output", "other"}

var flagGroup = map[string]string{
	"f": "input", "live": "input", "sample": "input", "kubeconfig": "input", "context": "input", "read-secrets": "input",
	"read-ceph": "input", "read-vsphere": "input", "kubernetes-version": "input", "ceph-csi-namespace": "input",
	"ceph-config": "input", "driver": "input", "vsphere-conf": "input", "vsphere-secret": "input",
	"vsphere-topology-categories": "input", "vsphere-legacy-topology": "input", "ceph-conf": "input", "ceph-id": "input",
	"ceph-keyring": "input", "ceph-command-prefix": "input", "monitors": "input",
	"n": "scope", "namespace": "scope", "A": "scope", "all-namespaces": "scope", "online": "scope", "undo": "scope",
	"source-changed": "scope", "pv-selector": "scope", "class-selector": "scope", "plugins": "scope", "apply": "scope",
	"adopt": "adoption", "adopt-csi": "adoption", "cephfs-secret": "adoption",
	"o": "output", "v": "output", "dry-run": "output",
}

// Placeholders name a flag's value where its type would say "value" or
// "string".
var Placeholders = map[string]string{
	"f": "FILE", "kubeconfig": "FILE", "context": "NAME", "n": "NAMESPACE", "namespace": "NAMESPACE", "o": "FORMAT",
	"kubernetes-version": "1.N", "driver": "PLUGIN=DRIVER", "source-changed": "KIND/NAME", "ceph-command-prefix": "COMMAND",
	"ceph-conf": "FILE", "ceph-config": "FILE", "ceph-keyring": "FILE", "ceph-id": "USER", "ceph-csi-namespace": "NAMESPACE",
	"cephfs-secret": "NAMESPACE/NAME", "vsphere-conf": "FILE", "vsphere-secret": "NAMESPACE/NAME",
	"vsphere-topology-categories": "ZONE,REGION", "state-namespace": "NAMESPACE", "inline-capacity": "SIZE",
	"monitors": "HOST:PORT,...", "pv-selector": "SELECTOR", "class-selector": "SELECTOR", "plugins": "PLUGIN,...",
	"identity": "NAME", "metrics-address": "ADDRESS", "v": "[=N]",
}

// FlagArg is how the help and docs/flags.md show a flag with its value:
// "-f FILE", "-v[=N]", "-concurrency int".
func FlagArg(f *flag.Flag) (arg, usage string) {
	typ, usage := flag.UnquoteUsage(f)
	if p, ok := Placeholders[f.Name]; ok {
		typ = p
	}
	switch {
	case strings.HasPrefix(typ, "["):
		return "-" + f.Name + typ, usage
	case typ != "":
		return "-" + f.Name + " " + typ, usage
	}
	return "-" + f.Name, usage
}

// WriteHelp writes a command's help: its usage line, what it does, its
// examples, and its flags by group.
func WriteHelp(w io.Writer, name, summary string, fs *flag.FlagSet) {
	line := usageLines[name]
	if line == "" {
		line = name + " [flags]"
	}
	fmt.Fprintf(w, "Usage:\n  csimigrate %s\n\n", line)
	for _, para := range strings.Split(summary, "\n\n") {
		if strings.HasPrefix(para, "Usage:") {
			continue
		}
		fmt.Fprint(w, output.Wrap(strings.Join(strings.Fields(para), " "), HelpWidth, ""), "\n")
	}
	if ex := examples[name]; len(ex) > 0 {
		fmt.Fprintln(w, "Examples:")
		for _, e := range ex {
			fmt.Fprintln(w, "  "+e)
		}
		fmt.Fprintln(w)
	}
	byGroup := map[string][]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) {
		g := flagGroup[f.Name]
		if g == "" {
			g = "other"
		}
		byGroup[g] = append(byGroup[g], f)
	})
	for _, g := range flagGroups {
		if len(byGroup[g]) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s flags:\n", strings.ToUpper(g[:1])+g[1:])
		printFlags(w, byGroup[g])
		fmt.Fprintln(w)
	}
}

// printFlags prints flags as flag.PrintDefaults does (the flag with its
// value's placeholder, its usage, a default that is not the zero value),
// the usage wrapped to HelpWidth columns.
func printFlags(w io.Writer, flags []*flag.Flag) {
	const indent = "        "
	for _, f := range flags {
		arg, usage := FlagArg(f)
		typ, _ := flag.UnquoteUsage(f)
		switch {
		case f.DefValue == "" || f.DefValue == "false" || f.DefValue == "0" || f.DefValue == "0s" || f.DefValue == "[]":
		case typ == "string":
			usage += fmt.Sprintf(" (default %q)", f.DefValue)
		default:
			usage += fmt.Sprintf(" (default %v)", f.DefValue)
		}
		fmt.Fprintln(w, "  "+arg)
		fmt.Fprint(w, output.Wrap(indent+strings.Join(strings.Fields(usage), " "), HelpWidth, indent))
	}
}

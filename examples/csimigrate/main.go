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
//
// Input is manifests as `kubectl get pv,pvc,sc,pods,secrets -A -o yaml` (or
// -o json) prints them, from files, directories or "-" (stdin), given with
// -f, or a live cluster with -live (and -kubeconfig). With neither, the
// command runs on an embedded sample cluster.
//
// Exit codes: 0 success; 1 something blocks (plan) or an object failed to
// translate; 2 usage error; 3 unreadable input.
package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
	"github.com/csimigrate/csimigrate/translate"
	"github.com/csimigrate/csimigrate/volumeid"
)

//go:embed sample.yaml
var sample []byte

const (
	exitOK      = 0
	exitBlocked = 1
	exitUsage   = 2
	exitInput   = 3
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

type common struct {
	files      stringList
	output     string
	cephConfig string
	// cephWarnings are the -ceph-config entries Ceph CSI accepts but that
	// look like mistakes (plan reports them).
	cephWarnings     []string
	cephCSINamespace string
	k8sVersion       string
	vsphereCats      string
	vsphereLegacy    bool
	nodeExpand       bool
	verbose          bool
	kubeconfig       string
	live             bool
	readSecrets      bool
}

func (c *common) register(fs *flag.FlagSet, outputs string) {
	fs.Var(&c.files, "f", "manifest file, directory or - for stdin (repeatable); none: the embedded sample")
	fs.StringVar(&c.output, "o", outputs[:strings.IndexByte(outputs, '|')], "output format: "+outputs)
	fs.StringVar(&c.cephConfig, "ceph-config", "", "Ceph CSI config.json (clusterID -> monitors), for CSI volumes without monitors")
	fs.StringVar(&c.cephCSINamespace, "ceph-csi-namespace", "ceph-csi", "namespace of the Ceph CSI config map in the plan")
	fs.StringVar(&c.k8sVersion, "kubernetes-version", "1.30", "the cluster's current Kubernetes minor version, for the feature-gate steps")
	fs.StringVar(&c.vsphereCats, "vsphere-topology-categories", "", `the vSphere CSI driver's topology-categories, "zone,region" (default: its zone and region keys)`)
	fs.BoolVar(&c.vsphereLegacy, "vsphere-legacy-topology", false, "the vSphere CSI driver reports the beta failure-domain labels")
	fs.BoolVar(&c.nodeExpand, "node-expand-secret", true, "set nodeExpandSecretRef on translated PVs (CSINodeExpandSecret)")
	fs.BoolVar(&c.verbose, "v", false, "log details to stderr")
	fs.BoolVar(&c.live, "live", false, "read the input from the cluster of -kubeconfig instead of files")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	fs.BoolVar(&c.readSecrets, "read-secrets", true, "with -live: read Secrets to check the fields migration needs (values are never printed)")
}

// vsphereTopology returns the CSI topology keys the options select.
func (c *common) vsphereTopology() (vsphere.Topology, error) {
	switch {
	case c.vsphereLegacy:
		return vsphere.LegacyTopology(), nil
	case c.vsphereCats != "":
		zone, region, ok := strings.Cut(c.vsphereCats, ",")
		if !ok || zone == "" || region == "" {
			return vsphere.Topology{}, fmt.Errorf(`-vsphere-topology-categories %q: want "zone-category,region-category"`, c.vsphereCats)
		}
		return vsphere.TopologyForCategories(zone, region), nil
	}
	return vsphere.Topology{ZoneKey: vsphere.DefaultZoneKey, RegionKey: vsphere.DefaultRegionKey}, nil
}

func (c *common) translator() (*translate.Translator, error) {
	opts := []translate.Option{translate.WithNodeExpandSecret(c.nodeExpand)}
	if c.cephConfig != "" {
		b, err := os.ReadFile(c.cephConfig)
		if err != nil {
			return nil, err
		}
		cfg, err := ceph.ParseClusterConfig(b)
		if err != nil {
			return nil, fmt.Errorf("-ceph-config %s: %w", c.cephConfig, err)
		}
		c.cephWarnings = cfg.Warnings()
		opts = append(opts, translate.WithCephClusterConfig(cfg))
	}
	topo, err := c.vsphereTopology()
	if err != nil {
		return nil, err
	}
	opts = append(opts, translate.WithVSphereOptions(vsphere.Options{Topology: topo}))
	return translate.New(opts...)
}

func (c *common) logger(stderr io.Writer) klog.Logger {
	if !c.verbose {
		return klog.Background().V(100)
	}
	return newStderrLogger(stderr)
}

func (c *common) read(stdin io.Reader, stderr io.Writer, inv Sink) error {
	count := 0
	progress := func(n int) {
		count += n
		if count%10000 == 0 {
			fmt.Fprintf(stderr, "read %d objects\n", count)
		}

	}
	if c.live {
		if len(c.files) > 0 {
			return fmt.Errorf("-live and -f exclude each other")
		}
		client, err := clientFor(c.kubeconfig, 50, 100)
		if err != nil {
			return err
		}
		return readLive(context.Background(), client, inv, c.readSecrets, progress, stderr)
	}
	if len(c.files) == 0 {
		rd := &reader{sink: inv, progress: progress}
		return rd.readStream("<embedded sample>", bytes.NewReader(sample))
	}
	return (&reader{sink: inv, progress: progress}).readInputs(c.files, stdin)
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `csimigrate moves in-tree RBD, CephFS and vSphere volumes to their CSI drivers.

Usage:
  csimigrate [command] [flags]

Commands:
  plan       report per volume what migration needs (default)
  translate  print the CSI equivalents of the input objects
  rewrite    print the ordered, idempotent steps that replace each in-tree PV by a CSI PV
  clusterid  print the Ceph CSI clusterID of a monitor list

Run "csimigrate <command> -h" for a command's flags. With no -f the command
runs on an embedded sample cluster.
`

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := "plan"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	} else if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	switch cmd {
	case "plan":
		return runPlan(args, stdin, stdout, stderr)
	case "translate":
		return runTranslate(args, stdin, stdout, stderr)
	case "rewrite":
		return runRewrite(args, stdin, stdout, stderr)
	case "clusterid":
		return runClusterID(args, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "csimigrate: unknown command %q\n\n%s", cmd, usage)
	return exitUsage
}

func newFlagSet(name, summary string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("csimigrate "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: csimigrate %s [flags]\n\n%s\n\nFlags:\n", name, summary)
		fs.PrintDefaults()
	}
	return fs
}

func parse(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "csimigrate: unexpected arguments %q\n", fs.Args())
		return exitUsage, false
	}
	return 0, true
}

func runClusterID(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("clusterid", "Prints the Ceph CSI clusterID that migration derives from a monitor list: the MD5 of the\n"+
		"comma-joined monitors exactly as given (not `md5sum <<<`, which hashes a trailing newline).\n\n"+
		"  csimigrate clusterid -monitors 10.70.53.126:6789,10.70.53.127:6789", stderr)
	mons := fs.String("monitors", "", "comma-separated monitors, exactly as in the StorageClass or joined from the PV")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *mons == "" {
		fmt.Fprintln(stderr, "csimigrate clusterid: -monitors is required")
		return exitUsage
	}
	fmt.Fprintln(stdout, volumeid.ClusterID(*mons))
	if strings.Contains(*mons, ", ") {
		fmt.Fprintf(stderr, "note: the monitors contain \", \"; spacing is part of the hash, so use exactly the string the StorageClass has\n")
	}
	return exitOK
}

func writeYAML(w io.Writer, objs ...any) error {
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "---\n%s", b); err != nil {
			return err
		}
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

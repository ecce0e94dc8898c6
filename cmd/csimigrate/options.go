package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr/funcr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/apply/cephtool"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/input"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// Each subcommand is options with register (its flags, from the shared
// groups below and its own), complete (what the flags leave to defaults,
// files read, positional arguments: fs.Args()), validate (flags that cannot work
// together) and run, driven by runCommand, as kubectl's commands are.
type command interface {
	register(fs *flag.FlagSet)
	complete(fs *flag.FlagSet) error
	validate() error
	run(stdin io.Reader, stdout, stderr io.Writer) int
}

// runCommand parses a subcommand's flags and completes, validates and runs
// it; a flag or argument error exits with exitUsage.
func runCommand(name, summary string, o command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet(name, summary, stderr)
	o.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			// Help on standard output, as kubectl gives it.
			writeHelp(stdout, name, summary, fs)
			return exitOK
		}
		fmt.Fprintf(stderr, "Run 'csimigrate %s -h' for its usage, examples and flags.\n", name)
		return exitUsage
	}
	if err := o.complete(fs); err != nil {
		fmt.Fprintf(stderr, "csimigrate %s: %v\n", name, err)
		return exitUsage
	}
	if err := o.validate(); err != nil {
		fmt.Fprintf(stderr, "csimigrate %s: %v\n", name, err)
		return exitUsage
	}
	return o.run(stdin, stdout, stderr)
}

// noArgs is complete's refusal of positional arguments. A number first is
// most likely kubectl's "-v 4", which -v (alone: -v=4) leaves as one.
func noArgs(args []string) error {
	if len(args) == 0 {
		return nil
	}
	if _, err := strconv.ParseUint(args[0], 10, 8); err == nil {
		return fmt.Errorf("unexpected arguments %q: give a verbosity as -v=%s (-v alone is -v=4)", args, args[0])
	}
	return fmt.Errorf("unexpected arguments %q", args)
}

// clusterFlags say how to reach the cluster, as kubectl's do.
type clusterFlags struct {
	kubeconfig string
	// context is the kubeconfig context to use ("" for its current one),
	// as kubectl's --context.
	context string
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	fs.StringVar(&c.context, "context", "", "the kubeconfig context to use (default: its current context), as kubectl's --context")
}

// inputFlags are the one input source of the reading commands: manifest
// files (-f), the live cluster (-live) or, with neither, the embedded
// sample.
type inputFlags struct {
	clusterFlags
	files stringList
	live  bool
	// sample is -sample: the embedded sample cluster is the input.
	sample bool
	// readSecrets: with -live, Secrets are read too (plan's -read-secrets);
	// readNodes: Nodes too (plan's -read-vsphere).
	readSecrets, readNodes bool
	// namespace is the namespace of namespaced input objects without one;
	// namespaceSet says -n was given: it then scopes the commands to the
	// claims of that namespace (scope), unless allNamespaces (-A).
	namespace     string
	namespaceSet  bool
	allNamespaces bool
	// stdinFile is the file standard input was spooled to: its documents
	// are named "<stdin>".
	stdinFile string
	// cleanup removes what spoolStdin made.
	cleanup func()
}

func (in *inputFlags) register(fs *flag.FlagSet) {
	fs.Var(&in.files, "f", "manifest file, directory or - for stdin (repeatable); none: the cluster of the current kubeconfig context, as kubectl reads it")
	fs.BoolVar(&in.live, "live", false, "read the input from the cluster of -kubeconfig (the default without -f)")
	fs.BoolVar(&in.sample, "sample", false, "read the embedded sample cluster (what csimigrate with no arguments plans), not yours")
	in.clusterFlags.register(fs)
	in.namespace = metav1.NamespaceDefault
	ns := namespaceFlag{in}
	fs.Var(ns, "n", "scope to the claims of this namespace, as kubectl -n: only PVs bound to its claims and its workloads' inline volumes, no StorageClass unless named (without -n: every namespace, as -A); also the namespace of input objects that have none")
	fs.Var(ns, "namespace", "the same as -n")
	fs.BoolVar(&in.allNamespaces, "A", false, "every namespace, and the PVs without claims and the StorageClasses (the default)")
	fs.BoolVar(&in.allNamespaces, "all-namespaces", false, "the same as -A")
}

// namespaceFlag is -n: the namespace, and that it was given.
type namespaceFlag struct{ in *inputFlags }

func (f namespaceFlag) String() string {
	if f.in == nil {
		return ""
	}
	return f.in.namespace
}

func (f namespaceFlag) Set(v string) error {
	if errs := validation.IsDNS1123Label(v); len(errs) > 0 {
		return fmt.Errorf("namespace %q: %s", v, strings.Join(errs, "; "))
	}
	f.in.namespace, f.in.namespaceSet = v, true
	return nil
}

// scope is the namespace whose claims the command acts on, "" for every
// namespace.
func (in *inputFlags) scope() string {
	if in.namespaceSet && !in.allNamespaces {
		return in.namespace
	}
	return ""
}

// liveByDefault makes the live cluster the input where neither files nor
// the sample are given, as kubectl reads the current context.
func (in *inputFlags) liveByDefault() {
	if len(in.files) == 0 && !in.sample {
		in.live = true
	}
}

func (in *inputFlags) validate() error {
	if in.live && len(in.files) > 0 {
		return errors.New("-live and -f exclude each other")
	}
	if in.sample && (in.live || len(in.files) > 0) {
		return errors.New("-sample excludes -f and -live: the sample is an input of its own")
	}
	if in.namespaceSet && in.allNamespaces {
		return errors.New("-n and -A exclude each other")
	}
	return nil
}

// spoolStdin keeps standard input, when it is one of the inputs, in a
// temporary file, so that the input can be read more than once;
// in.cleanup removes it.
func (in *inputFlags) spoolStdin(stdin io.Reader) error {
	in.cleanup = func() {}
	if !slices.Contains(in.files, "-") {
		return nil
	}
	path, cleanup, err := input.Spool(stdin)
	if err != nil {
		return err
	}
	in.cleanup = cleanup
	in.stdinFile = path
	for i, f := range in.files {
		if f == "-" {
			in.files[i] = path
		}
	}
	return nil
}

// translatorFlags say how objects are translated.
type translatorFlags struct {
	cephConfig    string
	vsphereCats   string
	vsphereLegacy bool
	nodeExpand    bool
	// drivers are -driver's choices, by in-tree plugin name.
	drivers map[string]string
	// cephWarnings are the -ceph-config entries Ceph CSI accepts but that
	// look like mistakes (plan reports them).
	cephWarnings []string
}

func (t *translatorFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.cephConfig, "ceph-config", "", "Ceph CSI config.json (clusterID -> monitors), for CSI volumes without monitors, and the entries adopted volumes may name (an adoption's default: those the cluster's Ceph CSI drivers read)")
	fs.StringVar(&t.vsphereCats, "vsphere-topology-categories", "", `the vSphere CSI driver's topology-categories, "zone,region" (default: its zone and region keys)`)
	fs.BoolVar(&t.vsphereLegacy, "vsphere-legacy-topology", false, "the vSphere CSI driver reports the beta failure-domain labels")
	fs.BoolVar(&t.nodeExpand, "node-expand-secret", true, "set nodeExpandSecretRef on translated PVs (CSINodeExpandSecret)")
	fs.Func("driver", "PLUGIN=DRIVER (repeatable): the CSI driver a backend's volumes go to where the cluster has more\n"+
		"than one, e.g. rbd=rook-ceph.rbd.csi.ceph.com (PLUGIN: rbd, cephfs, vsphere, or kubernetes.io/...).\n"+
		"Default: the one driver of the backend the cluster's CSIDrivers have", t.setDriver)
}

// setDriver takes one -driver PLUGIN=DRIVER.
func (t *translatorFlags) setDriver(v string) error {
	name, driver, ok := strings.Cut(v, "=")
	inTree := name
	if !strings.Contains(name, "/") {
		inTree = "kubernetes.io/" + name
	}
	if name == "vsphere" {
		inTree = vsphere.PluginName
	}
	if !ok || plugin.UpstreamDriverName(inTree) == "" || driver == "" {
		return fmt.Errorf("%q: want PLUGIN=DRIVER, PLUGIN one of rbd, cephfs, vsphere", v)
	}
	if t.drivers == nil {
		t.drivers = map[string]string{}
	}
	t.drivers[inTree] = driver
	return nil
}

// vsphereTopology returns the CSI topology keys the options select.
func (t *translatorFlags) vsphereTopology() (vsphere.Topology, error) {
	switch {
	case t.vsphereLegacy:
		return vsphere.LegacyTopology(), nil
	case t.vsphereCats != "":
		zone, region, ok := strings.Cut(t.vsphereCats, ",")
		if !ok || zone == "" || region == "" {
			return vsphere.Topology{}, fmt.Errorf(`-vsphere-topology-categories %q: want "zone-category,region-category"`, t.vsphereCats)
		}
		return vsphere.TopologyForCategories(zone, region), nil
	}
	return vsphere.Topology{ZoneKey: vsphere.DefaultZoneKey, RegionKey: vsphere.DefaultRegionKey}, nil
}

// translator builds the translator the flags describe.
func (t *translatorFlags) translator() (*translate.Translator, error) {
	opts := []translate.Option{translate.WithNodeExpandSecret(t.nodeExpand)}
	if t.cephConfig != "" {
		cfg, err := t.clusterConfig()
		if err != nil {
			return nil, err
		}
		t.cephWarnings = cfg.Warnings()
		opts = append(opts, translate.WithCephClusterConfig(cfg))
	}
	topo, err := t.vsphereTopology()
	if err != nil {
		return nil, err
	}
	opts = append(opts, translate.WithVSphereOptions(vsphere.Options{Topology: topo}))
	for inTree, d := range t.drivers {
		opts = append(opts, translate.WithDriverName(inTree, d))
	}
	tr, err := translate.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("-driver: %w", err)
	}
	return tr, nil
}

// clusterConfig is the Ceph CSI config of -ceph-config (empty without it).
func (t *translatorFlags) clusterConfig() (ceph.ClusterConfig, error) {
	if t.cephConfig == "" {
		return ceph.ClusterConfig{}, nil
	}
	b, err := os.ReadFile(t.cephConfig)
	if err != nil {
		return ceph.ClusterConfig{}, err
	}
	cfg, err := ceph.ParseClusterConfig(b)
	if err != nil {
		return ceph.ClusterConfig{}, fmt.Errorf("-ceph-config %s: %w", t.cephConfig, err)
	}
	return cfg, nil
}

// outputFlags are -o, one of a command's formats (the first is the
// default).
type outputFlags struct {
	output  string
	formats []string
}

func (o *outputFlags) register(fs *flag.FlagSet, formats ...string) {
	o.formats = formats
	fs.StringVar(&o.output, "o", formats[0], "output format: "+strings.Join(formats, "|"))
}

func (o *outputFlags) validate() error {
	if !slices.Contains(o.formats, o.output) {
		return fmt.Errorf("-o %q: want one of %s", o.output, strings.Join(o.formats, "|"))
	}
	return nil
}

// logFlags are -v: -v=N logs to stderr what is logged at verbosity N or
// less, as kubectl's -v=N does; -v alone is -v=4.
type logFlags struct {
	verbose bool
	level   int
}

// verbosity is -v's value: a bool flag (-v alone) that also takes a level.
type verbosity struct{ l *logFlags }

func (v verbosity) String() string {
	if v.l == nil || !v.l.verbose {
		return "0"
	}
	return strconv.Itoa(v.l.level)
}

func (v verbosity) Set(s string) error {
	switch s {
	case "true":
		v.l.verbose, v.l.level = true, 4
		return nil
	case "false":
		v.l.verbose, v.l.level = false, 0
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 10 {
		return fmt.Errorf("%q: want a level from 0 to 10 (-v=4), or -v alone for 4", s)
	}
	v.l.verbose, v.l.level = true, n
	return nil
}

func (verbosity) IsBoolFlag() bool { return true }

func (l *logFlags) register(fs *flag.FlagSet) {
	fs.Var(verbosity{l}, "v", "log details to stderr: -v=N logs what is logged at verbosity N or less, as kubectl's -v=N (-v alone is -v=4)")
}

func (l *logFlags) logger(stderr io.Writer) klog.Logger {
	if !l.verbose {
		return klog.Background().V(100)
	}
	return newStderrLogger(stderr, l.level)
}

func newStderrLogger(w io.Writer, level int) klog.Logger {
	return funcr.New(func(prefix, args string) { fmt.Fprintln(w, args) }, funcr.Options{Verbosity: level})
}

// newControllerLogger is the controller's logger: each line begins with
// its time (to the microsecond, with its zone), as a long-running program's log is
// read, by when.
func newControllerLogger(w io.Writer, level int) klog.Logger {
	return funcr.New(func(prefix, args string) { fmt.Fprintln(w, args) }, funcr.Options{Verbosity: level, LogTimestamp: true, TimestampFormat: "2006-01-02T15:04:05.000000Z07:00"})
}

// cephToolFlags say how Ceph's own tools reach the cluster, for the flag
// that uses them (with: "-read-ceph", "-adopt").
type cephToolFlags struct {
	tools cephtool.Tools
}

func (c *cephToolFlags) register(fs *flag.FlagSet, with string) {
	// A pool's ID and a file system's are read once a minute, not for
	// every volume (each read starts the ceph tool).
	c.tools.Cache = cephtool.NewCache(time.Minute)
	fs.StringVar(&c.tools.Conf, "ceph-conf", "", "with "+with+": the ceph.conf Ceph's tools read (their --conf)")
	fs.StringVar(&c.tools.ID, "ceph-id", "", "with "+with+": the Ceph user Ceph's tools authenticate as (their --id)")
	fs.StringVar(&c.tools.Keyring, "ceph-keyring", "", "with "+with+": that user's keyring file (their --keyring); keys are never printed")
	fs.Func("ceph-command-prefix", "with "+with+`: a command that runs Ceph's tools elsewhere, split at spaces, e.g. "kubectl exec -i -n rook-ceph deploy/rook-ceph-tools --"`, func(v string) error {
		c.tools.Prefix = strings.Fields(v)
		return nil
	})
}

// given reports whether any of the flags was given.
func (c *cephToolFlags) given() bool {
	t := c.tools
	return t.Conf != "" || t.ID != "" || t.Keyring != "" || len(t.Prefix) > 0
}

// common are the groups every reading command (plan, translate, rewrite)
// has: the input, the translator, the output and -v.
type common struct {
	inputFlags
	translatorFlags
	outputFlags
	logFlags
}

func (c *common) register(fs *flag.FlagSet, formats ...string) {
	c.inputFlags.register(fs)
	c.translatorFlags.register(fs)
	c.outputFlags.register(fs, formats...)
	c.logFlags.register(fs)
}

func (c *common) validate() error {
	if err := c.outputFlags.validate(); err != nil {
		return err
	}
	return c.inputFlags.validate()
}

type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// secretRef parses "namespace/name" of a Secret.
func secretRef(s string) (*v1.SecretReference, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, errors.New("want namespace/name of a Secret")
	}
	return &v1.SecretReference{Namespace: ns, Name: name}, nil
}

// sourceChangedUsage is -source-changed's help, for every command that
// takes it.
const sourceChangedUsage = "pv/NAME or storageclass/NAME (repeatable): the source that Helm, Flux, Argo CD, the addon manager or an operator keeps this\n" +
	"object from has the new form now, so it may be changed (as annotation " + rewrite.AnnSourceChanged + "=true on it says);\n" +
	"without either, such an object is left as it is (KeptByReconciler)"

// registerSourceChanged binds -source-changed into set.
func registerSourceChanged(fs *flag.FlagSet, set *rewrite.ChangedSources) {
	fs.Func("source-changed", sourceChangedUsage, func(v string) error {
		ref, err := parseObjectRef(v)
		if err == nil {
			*set = append(*set, ref)
		}
		return err
	})
}

// parseObjectRef reads pv/NAME, persistentvolume/NAME, sc/NAME or
// storageclass/NAME, as kubectl names them.
func parseObjectRef(v string) (rewrite.ObjectRef, error) {
	kind, name, ok := strings.Cut(v, "/")
	if ok && name != "" && !strings.Contains(name, "/") {
		switch strings.ToLower(kind) {
		case "pv", "persistentvolume", "persistentvolumes":
			return rewrite.PVRef(name), nil
		case "sc", "storageclass", "storageclasses":
			return rewrite.ClassRef(name), nil
		}
	}
	return rewrite.ObjectRef{}, fmt.Errorf("%q: want pv/NAME or storageclass/NAME", v)
}

// read reads the input the flags name into inv, saying on stderr how many
// objects it has read (at each 10,000) and what it did beyond reading.
func (c *inputFlags) read(stdin io.Reader, stderr io.Writer, inv input.Sink) error {
	count := 0
	progress := func(n int) {
		// Once per 10,000 objects read (never for none).
		if before := count; n > 0 {
			count += n
			if count/10000 > before/10000 {
				fmt.Fprintf(stderr, "read %d objects\n", count)
			}
		}
	}
	if c.live {
		if len(c.files) > 0 {
			return fmt.Errorf("-live and -f exclude each other")
		}
		client, err := clientFor(c.kubeconfig, c.context, 50, 100)
		if err != nil {
			return noCluster(err)
		}
		return input.ReadLive(context.Background(), client, inv, c.readSecrets, c.readNodes, progress, stderr)
	}
	rd := &input.Reader{Sink: inv, Progress: progress, Namespace: c.namespace, StdinFile: c.stdinFile}
	defer rd.Report(stderr)
	if c.sample {
		return rd.ReadStream("<embedded sample>", bytes.NewReader(input.Sample))
	}
	if len(c.files) == 0 {
		return errors.New("no input: give -f FILE, -live or -sample")
	}
	return rd.ReadInputs(c.files, stdin)
}

// noCluster is why the live cluster cannot be read, with the other inputs.
func noCluster(err error) error {
	return fmt.Errorf("reading the cluster of the current kubeconfig context (as kubectl does; -kubeconfig and -context name another): %w; or give -f cluster.json (csimigrate dump writes it), or -sample for the embedded sample", err)
}

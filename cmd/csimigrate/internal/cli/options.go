package cli

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
// together) and run, driven by RunCommand, as kubectl's commands are.
type Command interface {
	Register(fs *flag.FlagSet)
	Complete(fs *flag.FlagSet) error
	Validate() error
	Run(stdin io.Reader, stdout, stderr io.Writer) int
}

// RunCommand parses a subcommand's flags and completes, validates and runs
// it; a flag or argument error exits with ExitUsage.
func RunCommand(name, summary string, o Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := NewFlagSet(name, summary, stderr)
	o.Register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			// Help on standard output, as kubectl gives it.
			WriteHelp(stdout, name, summary, fs)
			return ExitOK
		}
		fmt.Fprintf(stderr, "Run 'csimigrate %s -h' for its usage, examples and flags.\n", name)
		return ExitUsage
	}
	if err := o.Complete(fs); err != nil {
		fmt.Fprintf(stderr, "csimigrate %s: %v\n", name, err)
		return ExitUsage
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(stderr, "csimigrate %s: %v\n", name, err)
		return ExitUsage
	}
	return o.Run(stdin, stdout, stderr)
}

// NoArgs is complete's refusal of positional arguments. A number first is
// most likely kubectl's "-v 4", which -v (alone: -v=4) leaves as one.
func NoArgs(args []string) error {
	if len(args) == 0 {
		return nil
	}
	if _, err := strconv.ParseUint(args[0], 10, 8); err == nil {
		return fmt.Errorf("unexpected arguments %q: give a verbosity as -v=%s (-v alone is -v=4)", args, args[0])
	}
	return fmt.Errorf("unexpected arguments %q", args)
}

// ClusterFlags say how to reach the cluster, as kubectl's do.
type ClusterFlags struct {
	Kubeconfig string
	// context is the kubeconfig context to use ("" for its current one),
	// as kubectl's --context.
	Context string
}

// Register adds -kubeconfig and -context.
func (c *ClusterFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	fs.StringVar(&c.Context, "context", "", "the kubeconfig context to use (default: its current context), as kubectl's --context")
}

// InputFlags are the one input source of the reading commands: manifest
// files (-f), the live cluster (-live) or, with neither, the embedded
// sample.
type InputFlags struct {
	ClusterFlags
	Files StringList
	Live  bool
	// sample is -sample: the embedded sample cluster is the input.
	Sample bool
	// readSecrets: with -live, Secrets are read too (plan's -read-secrets);
	// readNodes: Nodes too (plan's -read-vsphere).
	ReadSecrets, ReadNodes bool
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
	Cleanup func()
}

// Register adds the input flags (-f, -live, -sample, -n, -A) and the
// cluster's.
func (in *InputFlags) Register(fs *flag.FlagSet) {
	fs.Var(&in.Files, "f", "manifest file, directory or - for stdin (repeatable); none: the cluster of the current kubeconfig context, as kubectl reads it")
	fs.BoolVar(&in.Live, "live", false, "read the input from the cluster of -kubeconfig (the default without -f)")
	fs.BoolVar(&in.Sample, "sample", false, "read the embedded sample cluster (what csimigrate with no arguments plans), not yours")
	in.ClusterFlags.Register(fs)
	in.namespace = metav1.NamespaceDefault
	ns := namespaceFlag{in}
	fs.Var(ns, "n", "scope to the claims of this namespace, as kubectl -n: only PVs bound to its claims and its workloads' inline volumes, no StorageClass unless named (without -n: every namespace, as -A); also the namespace of input objects that have none")
	fs.Var(ns, "namespace", "the same as -n")
	fs.BoolVar(&in.allNamespaces, "A", false, "every namespace, and the PVs without claims and the StorageClasses (the default)")
	fs.BoolVar(&in.allNamespaces, "all-namespaces", false, "the same as -A")
}

// namespaceFlag is -n: the namespace, and that it was given.
type namespaceFlag struct{ in *InputFlags }

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

// Scope is the namespace whose claims the command acts on, "" for every
// namespace.
func (in *InputFlags) Scope() string {
	if in.namespaceSet && !in.allNamespaces {
		return in.namespace
	}
	return ""
}

// LiveByDefault makes the live cluster the input where neither files nor
// the sample are given, as kubectl reads the current context.
func (in *InputFlags) LiveByDefault() {
	if len(in.Files) == 0 && !in.Sample {
		in.Live = true
	}
}

// Validate refuses input flags that exclude each other.
func (in *InputFlags) Validate() error {
	if in.Live && len(in.Files) > 0 {
		return errors.New("-live and -f exclude each other")
	}
	if in.Sample && (in.Live || len(in.Files) > 0) {
		return errors.New("-sample excludes -f and -live: the sample is an input of its own")
	}
	if in.namespaceSet && in.allNamespaces {
		return errors.New("-n and -A exclude each other")
	}
	return nil
}

// SpoolStdin keeps standard input, when it is one of the inputs, in a
// temporary file, so that the input can be read more than once;
// in.Cleanup removes it.
func (in *InputFlags) SpoolStdin(stdin io.Reader) error {
	in.Cleanup = func() {}
	if !slices.Contains(in.Files, "-") {
		return nil
	}
	path, cleanup, err := input.Spool(stdin)
	if err != nil {
		return err
	}
	in.Cleanup = cleanup
	in.stdinFile = path
	for i, f := range in.Files {
		if f == "-" {
			in.Files[i] = path
		}
	}
	return nil
}

// TranslatorFlags say how objects are translated.
type TranslatorFlags struct {
	CephConfig    string
	vsphereCats   string
	vsphereLegacy bool
	NodeExpand    bool
	// drivers are -driver's choices, by in-tree plugin name.
	Drivers map[string]string
	// cephWarnings are the -ceph-config entries Ceph CSI accepts but that
	// look like mistakes (plan reports them).
	CephWarnings []string
}

// Register adds the translator's flags.
func (t *TranslatorFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&t.CephConfig, "ceph-config", "", "Ceph CSI config.json (clusterID -> monitors), for CSI volumes without monitors, and the entries adopted volumes may name (an adoption's default: those the cluster's Ceph CSI drivers read)")
	fs.StringVar(&t.vsphereCats, "vsphere-topology-categories", "", `the vSphere CSI driver's topology-categories, "zone,region" (default: its zone and region keys)`)
	fs.BoolVar(&t.vsphereLegacy, "vsphere-legacy-topology", false, "the vSphere CSI driver reports the beta failure-domain labels")
	fs.BoolVar(&t.NodeExpand, "node-expand-secret", true, "set nodeExpandSecretRef on translated PVs (CSINodeExpandSecret)")
	fs.Func("driver", "PLUGIN=DRIVER (repeatable): the CSI driver a backend's volumes go to where the cluster has more\n"+
		"than one, e.g. rbd=rook-ceph.rbd.csi.ceph.com (PLUGIN: rbd, cephfs, vsphere, or kubernetes.io/...).\n"+
		"Default: the one driver of the backend the cluster's CSIDrivers have", t.setDriver)
}

// setDriver takes one -driver PLUGIN=DRIVER.
func (t *TranslatorFlags) setDriver(v string) error {
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
	if t.Drivers == nil {
		t.Drivers = map[string]string{}
	}
	t.Drivers[inTree] = driver
	return nil
}

// VSphereTopology returns the CSI topology keys the options select.
func (t *TranslatorFlags) VSphereTopology() (vsphere.Topology, error) {
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

// Translator builds the translator the flags describe.
func (t *TranslatorFlags) Translator() (*translate.Translator, error) {
	opts := []translate.Option{translate.WithNodeExpandSecret(t.NodeExpand)}
	if t.CephConfig != "" {
		cfg, err := t.ClusterConfig()
		if err != nil {
			return nil, err
		}
		t.CephWarnings = cfg.Warnings()
		opts = append(opts, translate.WithCephClusterConfig(cfg))
	}
	topo, err := t.VSphereTopology()
	if err != nil {
		return nil, err
	}
	opts = append(opts, translate.WithVSphereOptions(vsphere.Options{Topology: topo}))
	for inTree, d := range t.Drivers {
		opts = append(opts, translate.WithDriverName(inTree, d))
	}
	tr, err := translate.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("-driver: %w", err)
	}
	return tr, nil
}

// ClusterConfig is the Ceph CSI config of -ceph-config (empty without it).
func (t *TranslatorFlags) ClusterConfig() (ceph.ClusterConfig, error) {
	if t.CephConfig == "" {
		return ceph.ClusterConfig{}, nil
	}
	b, err := os.ReadFile(t.CephConfig)
	if err != nil {
		return ceph.ClusterConfig{}, err
	}
	cfg, err := ceph.ParseClusterConfig(b)
	if err != nil {
		return ceph.ClusterConfig{}, fmt.Errorf("-ceph-config %s: %w", t.CephConfig, err)
	}
	return cfg, nil
}

// OutputFlags are -o, one of a command's formats (the first is the
// default).
type OutputFlags struct {
	Output  string
	formats []string
}

// Register adds -o, one of formats (the first is the default).
func (o *OutputFlags) Register(fs *flag.FlagSet, formats ...string) {
	o.formats = formats
	fs.StringVar(&o.Output, "o", formats[0], "output format: "+strings.Join(formats, "|"))
}

// Validate refuses an -o that is not one of the formats.
func (o *OutputFlags) Validate() error {
	if !slices.Contains(o.formats, o.Output) {
		return fmt.Errorf("-o %q: want one of %s", o.Output, strings.Join(o.formats, "|"))
	}
	return nil
}

// LogFlags are -v: -v=N logs to stderr what is logged at verbosity N or
// less, as kubectl's -v=N does; -v alone is -v=4.
type LogFlags struct {
	Verbose bool
	Level   int
}

// verbosity is -v's value: a bool flag (-v alone) that also takes a level.
type verbosity struct{ l *LogFlags }

func (v verbosity) String() string {
	if v.l == nil || !v.l.Verbose {
		return "0"
	}
	return strconv.Itoa(v.l.Level)
}

func (v verbosity) Set(s string) error {
	switch s {
	case "true":
		v.l.Verbose, v.l.Level = true, 4
		return nil
	case "false":
		v.l.Verbose, v.l.Level = false, 0
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 10 {
		return fmt.Errorf("%q: want a level from 0 to 10 (-v=4), or -v alone for 4", s)
	}
	v.l.Verbose, v.l.Level = true, n
	return nil
}

func (verbosity) IsBoolFlag() bool { return true }

// Register adds -v.
func (l *LogFlags) Register(fs *flag.FlagSet) {
	fs.Var(verbosity{l}, "v", "log details to stderr: -v=N logs what is logged at verbosity N or less, as kubectl's -v=N (-v alone is -v=4)")
}

// Logger is the logger -v selects: without it nothing is logged, with it
// lines on stderr up to its level.
func (l *LogFlags) Logger(stderr io.Writer) klog.Logger {
	if !l.Verbose {
		return klog.Background().V(100)
	}
	return NewStderrLogger(stderr, l.Level)
}

// NewStderrLogger logs to w, a line an entry, what is logged at level or
// less.
func NewStderrLogger(w io.Writer, level int) klog.Logger {
	return funcr.New(func(prefix, args string) { fmt.Fprintln(w, args) }, funcr.Options{Verbosity: level})
}

// NewControllerLogger is the controller's logger: each line begins with
// its time (to the microsecond, with its zone), as a long-running program's log is
// read, by when.
func NewControllerLogger(w io.Writer, level int) klog.Logger {
	return funcr.New(func(prefix, args string) { fmt.Fprintln(w, args) }, funcr.Options{Verbosity: level, LogTimestamp: true, TimestampFormat: "2006-01-02T15:04:05.000000Z07:00"})
}

// CephToolFlags say how Ceph's own tools reach the cluster, for the flag
// that uses them (with: "-read-ceph", "-adopt").
type CephToolFlags struct {
	Tools cephtool.Tools
}

// Register adds the flags of Ceph's tools, each "with" the flag that uses
// them.
func (c *CephToolFlags) Register(fs *flag.FlagSet, with string) {
	// A pool's ID and a file system's are read once a minute, not for
	// every volume (each read starts the ceph tool).
	c.Tools.Cache = cephtool.NewCache(time.Minute)
	fs.StringVar(&c.Tools.Conf, "ceph-conf", "", "with "+with+": the ceph.conf Ceph's tools read (their --conf)")
	fs.StringVar(&c.Tools.ID, "ceph-id", "", "with "+with+": the Ceph user Ceph's tools authenticate as (their --id)")
	fs.StringVar(&c.Tools.Keyring, "ceph-keyring", "", "with "+with+": that user's keyring file (their --keyring); keys are never printed")
	fs.Func("ceph-command-prefix", "with "+with+`: a command that runs Ceph's tools elsewhere, split at spaces, e.g. "kubectl exec -i -n rook-ceph deploy/rook-ceph-tools --"`, func(v string) error {
		c.Tools.Prefix = strings.Fields(v)
		return nil
	})
}

// Given reports whether any of the flags was given.
func (c *CephToolFlags) Given() bool {
	t := c.Tools
	return t.Conf != "" || t.ID != "" || t.Keyring != "" || len(t.Prefix) > 0
}

// common are the groups every reading command (plan, translate, rewrite)
// has: the input, the translator, the output and -v.
type Common struct {
	InputFlags
	TranslatorFlags
	OutputFlags
	LogFlags
}

// Register adds the flags of every group; -o takes one of formats.
func (c *Common) Register(fs *flag.FlagSet, formats ...string) {
	c.InputFlags.Register(fs)
	c.TranslatorFlags.Register(fs)
	c.OutputFlags.Register(fs, formats...)
	c.LogFlags.Register(fs)
}

// Validate refuses the groups' flags that exclude each other.
func (c *Common) Validate() error {
	if err := c.OutputFlags.Validate(); err != nil {
		return err
	}
	return c.InputFlags.Validate()
}

// StringList is a repeatable string flag.
type StringList []string

// String is the values, joined with commas.
func (s *StringList) String() string { return strings.Join(*s, ",") }

// Set appends v.
func (s *StringList) Set(v string) error { *s = append(*s, v); return nil }

// SecretRef parses "namespace/name" of a Secret.
func SecretRef(s string) (*v1.SecretReference, error) {
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

// RegisterSourceChanged binds -source-changed into set.
func RegisterSourceChanged(fs *flag.FlagSet, set *rewrite.ChangedSources) {
	fs.Func("source-changed", sourceChangedUsage, func(v string) error {
		ref, err := ParseObjectRef(v)
		if err == nil {
			*set = append(*set, ref)
		}
		return err
	})
}

// ParseObjectRef reads pv/NAME, persistentvolume/NAME, sc/NAME or
// storageclass/NAME, as kubectl names them.
func ParseObjectRef(v string) (rewrite.ObjectRef, error) {
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

// ReadInput reads the input the flags name into inv, saying on stderr how many
// objects it has read (at each 10,000) and what it did beyond reading.
func (c *InputFlags) ReadInput(stdin io.Reader, stderr io.Writer, inv input.Sink) error {
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
	if c.Live {
		if len(c.Files) > 0 {
			return fmt.Errorf("-live and -f exclude each other")
		}
		client, err := ClientFor(c.Kubeconfig, c.Context, 50, 100)
		if err != nil {
			return NoCluster(err)
		}
		return input.ReadLive(context.Background(), client, inv, c.ReadSecrets, c.ReadNodes, progress, stderr)
	}
	rd := &input.Reader{Sink: inv, Progress: progress, Namespace: c.namespace, StdinFile: c.stdinFile}
	defer rd.Report(stderr)
	if c.Sample {
		return rd.ReadStream("<embedded sample>", bytes.NewReader(input.Sample))
	}
	if len(c.Files) == 0 {
		return errors.New("no input: give -f FILE, -live or -sample")
	}
	return rd.ReadInputs(c.Files, stdin)
}

// NoCluster is why the live cluster cannot be read, with the other inputs.
func NoCluster(err error) error {
	return fmt.Errorf("reading the cluster of the current kubeconfig context (as kubectl does; -kubeconfig and -context name another): %w; or give -f cluster.json (csimigrate dump writes it), or -sample for the embedded sample", err)
}

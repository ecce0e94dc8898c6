package plancmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/apply/cephtool"
	"github.com/csimigrate/csimigrate/apply/vcenter"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/input"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/output"
	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// options are plan's flags.
type options struct {
	cli.Common
	// k8sMinor is -kubernetes-version's minor version (k8sMinorSet: it was
	// given), else the live API server's; serverVersion is the API
	// server's as read (-live).
	k8sMinor         int
	k8sMinorSet      bool
	serverVersion    string
	writerHolder     string
	cephCSINamespace string
	// readCeph reads RBD images and CephFS subvolumes with Ceph's tools
	// for the plan's forms.
	readCeph bool
	ceph     cli.CephToolFlags
	vsphere  cli.VSphereFlags
	tr       *translate.Translator
	// vcenter and mappings are what -read-vsphere connected to and read.
	vcenter  *vcenter.Client
	mappings map[string]string
	// sourceChanged are -source-changed's objects.
	sourceChanged rewrite.ChangedSources
	// online is -online: the plan of rewrite -apply -online.
	online bool
}

// Summary is what csimigrate plan does, as its help and docs/flags.md say.
const Summary = "Reports, per volume, whether it can be migrated and why not; the Ceph CSI config map to create;\n" +
	"the Secrets to add or derive (names and fields, never values); the StorageClasses to recreate; hazards;\n" +
	"inline volumes of pods and workloads; and the feature-gate steps for the cluster's version. Every check\n" +
	"csimigrate rewrite -apply makes is made here. Exits 1 when something blocks the migration."

// Run runs csimigrate plan with args and returns its exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli.RunCommand("plan", Summary, &options{}, args, stdin, stdout, stderr)
}

func (o *options) Register(fs *flag.FlagSet) {
	o.Common.Register(fs, "table", "wide", "json", "yaml", "ceph-csi")
	fs.StringVar(&o.cephCSINamespace, "ceph-csi-namespace", "", "the namespace of the Ceph CSI drivers' config map, where the input has such maps in\n"+
		"several namespaces and not the drivers' pods that tell which one each reads")
	o.k8sMinor = 30
	fs.Func("kubernetes-version", fmt.Sprintf("the cluster's current Kubernetes minor version, 1.%d or later (a release after 1.%d has 1.%d's rules), for the feature-gate steps (default 1.30)", featuregate.MinMinor, featuregate.MaxMinor, featuregate.MaxMinor), func(v string) error {
		minor, err := featuregate.ParseMinor(v)
		if err == nil && minor < featuregate.MinMinor {
			err = fmt.Errorf("kubernetes 1.%d: want 1.%d or later", minor, featuregate.MinMinor)
		}
		o.k8sMinor, o.k8sMinorSet = minor, true
		return err
	})
	cli.RegisterSourceChanged(fs, &o.sourceChanged)
	fs.BoolVar(&o.online, "online", false, "plan for rewrite -apply -online: a volume in use is then a warning where the release still migrates its plugin on the nodes (the rewrite checks each node), not a blocker")
	fs.BoolVar(&o.ReadSecrets, "read-secrets", true, "with -live: read Secrets to check the fields migration needs (values are never printed)")
	fs.BoolVar(&o.readCeph, "read-ceph", false, "read each in-tree RBD image and CephFS subvolume from Ceph (with Ceph's tools, as -ceph-conf, -ceph-id, -ceph-keyring and -ceph-command-prefix say) to tell what rewrite -apply -adopt makes of it, instead of predicting it from its class or path (Ceph's volumes module records a legacy subvolume's metadata under /volumes/_legacy the first time it is asked, as on Ceph CSI's first call)")
	o.ceph.Register(fs, "-read-ceph")
	o.vsphere.Register(fs, true)
}

func (o *options) Complete(fs *flag.FlagSet) error {
	if err := cli.NoArgs(fs.Args()); err != nil {
		return err
	}
	o.LiveByDefault()
	o.vsphere.Complete(fs)
	// The nodes: their kubelets' versions (and, with -read-vsphere, their
	// virtual machines).
	o.ReadNodes = true
	var err error
	o.tr, err = o.Translator()
	return err
}

func (o *options) Validate() error {
	if o.ceph.Given() && !o.readCeph {
		return errors.New("-ceph-conf, -ceph-id, -ceph-keyring and -ceph-command-prefix only with -read-ceph")
	}
	if err := o.vsphere.Validate(o.Live); err != nil {
		return err
	}
	return o.Common.Validate()
}

// planner is the plan's planner for the options.
func (o *options) planner(stderr io.Writer) *plan.Planner {
	topo, _ := o.VSphereTopology()
	opts := plan.Options{VSphereKeys: []string{topo.ZoneKey, topo.RegionKey}, KubernetesMinor: o.k8sMinor, ServerVersion: o.serverVersion, WriterHolder: o.writerHolder,
		CephConfigWarnings: o.CephWarnings, CephCSINamespace: o.cephCSINamespace, VSphereMappings: o.mappings, Drivers: o.Drivers, SourceChanged: o.sourceChanged, Online: o.online, Namespace: o.Scope()}
	if o.vcenter != nil {
		opts.VCenter = o.vcenter
	}
	if o.readCeph {
		tools := o.ceph.Tools
		opts.RBDImage = func(pool, name string) (*adopt.Image, error) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			return tools.Image(ctx, pool, "", name)
		}
		opts.CephFSSubvolume = func(fs, group, name string) (*adopt.Subvolume, string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sv, err := tools.Subvolume(ctx, fs, group, name)
			if te := (*cephtool.Error)(nil); errors.Is(err, cephtool.ErrNotSubvolume) && errors.As(err, &te) {
				return nil, te.Answer(), nil
			}
			return sv, "", err
		}
		opts.CephFSID = func(monitors []string) (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			return tools.FSID(ctx, monitors)
		}
	}
	return plan.New(o.tr, o.Logger(stderr), opts)
}

func (o *options) Run(stdin io.Reader, stdout, stderr io.Writer) int {
	if err := o.SpoolStdin(stdin); err != nil {
		fmt.Fprintf(stderr, "csimigrate plan: %v\n", err)
		return cli.ExitInput
	}
	defer o.Cleanup()
	if o.vsphere.ReadVCenter {
		if err := o.openVCenter(stderr); err != nil {
			fmt.Fprintf(stderr, "csimigrate plan: -read-vsphere: %v\n", err)
			return cli.ExitInput
		}
		defer o.vcenter.Close()
	}
	if o.Live {
		// The cluster's own release, as kubectl version reads it, unless
		// -kubernetes-version names another (the plan then says so).
		if err := o.readServerVersion(); err != nil {
			fmt.Fprintf(stderr, "csimigrate plan: %v\n", err)
			return cli.ExitInput
		}
	} else if v := input.DumpServerVersion(o.Files); v != "" {
		// A dump's: the release of the cluster it was read from.
		if minor, err := featuregate.ParseMinor(v); err == nil {
			o.serverVersion = v
			if !o.k8sMinorSet {
				o.k8sMinor = minor
			}
		}
	}
	pl := o.planner(stderr)
	// A dump's kinds listed whole: none of one is the cluster's none.
	for _, r := range input.DumpListed(o.Files) {
		pl.Listed(r)
	}
	// From files, the PVs in a second pass, once claims, classes and
	// secrets are known; -live lists PVs last.
	passes := []plan.Phase{plan.PhaseOthers, plan.PhasePVs}
	if o.Live {
		passes = passes[:1]
	}
	for i, phase := range passes {
		if !o.Live {
			pl.SetPhase(phase)
		}
		report := stderr
		if i > 0 {
			report = io.Discard // said once
		}
		if err := o.ReadInput(stdin, report, pl); err != nil {
			fmt.Fprintf(stderr, "csimigrate plan: %v\n", err)
			return cli.ExitInput
		}
	}
	report := pl.Finish()
	output.LocalizePlan(report)
	var err error
	switch o.Output {
	case "json":
		err = output.WriteJSON(stdout, report)
	case "yaml":
		err = output.WriteYAML(stdout, report)
	case "ceph-csi":
		err = output.WriteCephCSIObjects(stdout, stderr, report)
	case "wide":
		err = output.WritePlanTable(stdout, report, true, o.Sample)
	default:
		err = output.WritePlanTable(stdout, report, false, o.Sample)
	}
	if o.Sample && (o.Output == "json" || o.Output == "yaml") {
		fmt.Fprintln(stderr, output.SampleNote)
	}
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate plan: writing the output: %v\n", err)
		return cli.ExitOutput
	}
	if report.Blocked {
		return cli.ExitBlocked
	}
	return cli.ExitOK
}

// openVCenter connects to vCenter as the driver's configuration says and,
// with -live, reads the driver's migration mappings.
func (o *options) openVCenter(stderr io.Writer) error {
	var client kubernetes.Interface
	if o.Live {
		c, err := cli.ClientFor(o.Kubeconfig, o.Context, 50, 100)
		if err != nil {
			return err
		}
		client = c
	}
	var err error
	o.vcenter, o.mappings, err = o.vsphere.Open(context.Background(), client, o.Logger(stderr))
	return err
}

// readServerVersion reads the live API server's version; without
// -kubernetes-version, the plan is for its release.
func (o *options) readServerVersion() error {
	client, err := cli.ClientFor(o.Kubeconfig, o.Context, 50, 100)
	if err != nil {
		return cli.NoCluster(err)
	}
	v, err := client.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("reading the API server's version: %w", err)
	}
	minor, err := featuregate.ParseMinor(v.GitVersion)
	if err != nil {
		return fmt.Errorf("the API server's version %q: %w", v.GitVersion, err)
	}
	o.serverVersion = v.GitVersion
	if !o.k8sMinorSet {
		o.k8sMinor = minor
	}
	// A writer that holds the Lease (in the default state namespace): a
	// rewrite under way, or interrupted moments ago.
	if h, err := apply.LeaseHolder(context.Background(), client, apply.DefaultStateNamespace); err == nil {
		o.writerHolder = h
	}
	return nil
}

// New is the plan command's options, for its flags (completion, the flag
// reference).
func New() cli.Command { return &options{} }

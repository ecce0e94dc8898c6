package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/apply/cephtool"
	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
	"github.com/csimigrate/csimigrate/translate"
)

func newStderrLogger(w io.Writer) klog.Logger {
	return funcr.New(func(prefix, args string) { fmt.Fprintln(w, args) }, funcr.Options{Verbosity: 4})
}

// setup parses a command's flags, builds its translator and reads the input
// into the sink it makes; ok false means exit with code.
func setup(name, summary string, args []string, stdin io.Reader, stderr io.Writer, outputs string, sink func(*common, *translate.Translator) Sink) (c *common, code int, ok bool) {
	c = &common{inlineCapacity: defaultInlineCapacity}
	fs := newFlagSet(name, summary, stderr)
	c.register(fs, outputs, name)
	if code, ok := parse(fs, args); !ok {
		return nil, code, false
	}
	if !strings.Contains("|"+outputs+"|", "|"+c.output+"|") {
		fmt.Fprintf(stderr, "csimigrate %s: -o %q: want one of %s\n", name, c.output, outputs)
		return nil, exitUsage, false
	}
	tr, err := c.translator()
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate %s: %v\n", name, err)
		return nil, exitUsage, false
	}
	if err := c.spoolStdin(stdin); err != nil {
		fmt.Fprintf(stderr, "csimigrate %s: %v\n", name, err)
		return nil, exitInput, false
	}
	if err := c.read(stdin, stderr, sink(c, tr)); err != nil {
		c.cleanup()
		fmt.Fprintf(stderr, "csimigrate %s: %v\n", name, err)
		return nil, exitInput, false
	}
	return c, 0, true
}

type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

type common struct {
	files      stringList
	output     string
	cephConfig string
	// cephWarnings are the -ceph-config entries Ceph CSI accepts but that
	// look like mistakes (plan reports them).
	cephWarnings     []string
	cephCSINamespace string
	// k8sMinor is -kubernetes-version's minor version.
	k8sMinor      int
	vsphereCats   string
	vsphereLegacy bool
	nodeExpand    bool
	verbose       bool
	kubeconfig    string
	// context is the kubeconfig context to use ("" for its current one),
	// as kubectl's --context.
	context     string
	live        bool
	readSecrets bool
	// readCeph reads RBD images with cephTools for the plan's forms.
	readCeph  bool
	cephTools cephtool.Tools
	// namespace is the namespace of namespaced input objects without one.
	namespace string
	// inlineCapacity is the size of PVs made for inline volumes.
	inlineCapacity resource.Quantity
	// stdinFile is the file standard input was spooled to: its documents
	// are named "<stdin>".
	stdinFile string
	// cleanup removes what spoolStdin made.
	cleanup func()
}

// spoolStdin keeps standard input, when it is one of the inputs, in a
// temporary file, so that the input can be read more than once; c.cleanup
// removes it.
func (c *common) spoolStdin(stdin io.Reader) error {
	c.cleanup = func() {}
	if !slices.Contains(c.files, "-") {
		return nil
	}
	path, cleanup, err := spool(stdin)
	if err != nil {
		return err
	}
	c.cleanup = cleanup
	c.stdinFile = path
	for i, f := range c.files {
		if f == "-" {
			c.files[i] = path
		}
	}
	return nil
}

// register defines the flags every reading command takes, and with plan
// those only the plan uses.
func (c *common) register(fs *flag.FlagSet, outputs, cmd string) {
	fs.Var(&c.files, "f", "manifest file, directory or - for stdin (repeatable); none: the embedded sample")
	fs.StringVar(&c.output, "o", outputs[:strings.IndexByte(outputs, '|')], "output format: "+outputs)
	fs.StringVar(&c.cephConfig, "ceph-config", "", "Ceph CSI config.json (clusterID -> monitors), for CSI volumes without monitors")
	fs.StringVar(&c.vsphereCats, "vsphere-topology-categories", "", `the vSphere CSI driver's topology-categories, "zone,region" (default: its zone and region keys)`)
	fs.BoolVar(&c.vsphereLegacy, "vsphere-legacy-topology", false, "the vSphere CSI driver reports the beta failure-domain labels")
	fs.BoolVar(&c.nodeExpand, "node-expand-secret", true, "set nodeExpandSecretRef on translated PVs (CSINodeExpandSecret)")
	fs.BoolVar(&c.verbose, "v", false, "log details to stderr")
	fs.BoolVar(&c.live, "live", false, "read the input from the cluster of -kubeconfig instead of files")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	fs.StringVar(&c.context, "context", "", "the kubeconfig context to use (default: its current context), as kubectl's --context")
	fs.StringVar(&c.namespace, "n", metav1.NamespaceDefault, "namespace of input objects that have none (as kubectl -n)")
	fs.StringVar(&c.namespace, "namespace", metav1.NamespaceDefault, "the same as -n")
	if cmd == "translate" {
		fs.Func("inline-capacity", "size of the PVs and claims made for inline volumes, which carry none (default 1Gi)", func(v string) error {
			q, err := resource.ParseQuantity(v)
			if err == nil && q.Sign() <= 0 {
				err = errors.New("must be positive")
			}
			c.inlineCapacity = q
			return err
		})
	}
	if cmd == "plan" {
		fs.StringVar(&c.cephCSINamespace, "ceph-csi-namespace", "ceph-csi", "namespace of the Ceph CSI config map in the plan")
		c.k8sMinor = 30
		fs.Func("kubernetes-version", fmt.Sprintf("the cluster's current Kubernetes minor version, 1.%d to 1.%d, for the feature-gate steps (default 1.30)", featuregate.MinMinor, featuregate.MaxMinor), func(v string) error {
			minor, err := featuregate.ParseMinor(v)
			if err == nil && (minor < featuregate.MinMinor || minor > featuregate.MaxMinor) {
				err = fmt.Errorf("kubernetes 1.%d: want 1.%d to 1.%d", minor, featuregate.MinMinor, featuregate.MaxMinor)
			}
			c.k8sMinor = minor
			return err
		})
		fs.BoolVar(&c.readSecrets, "read-secrets", true, "with -live: read Secrets to check the fields migration needs (values are never printed)")
		fs.BoolVar(&c.readCeph, "read-ceph", false, "read each in-tree RBD image and CephFS subvolume from Ceph (with Ceph's tools, as -ceph-conf, -ceph-id, -ceph-keyring and -ceph-command-prefix say) to tell what rewrite -apply -adopt makes of it, instead of predicting it from its class or path (Ceph's volumes module records a legacy subvolume's metadata under /volumes/_legacy the first time it is asked, as on Ceph CSI's first call)")
		fs.StringVar(&c.cephTools.Conf, "ceph-conf", "", "with -read-ceph: the ceph.conf Ceph's tools read (their --conf)")
		fs.StringVar(&c.cephTools.ID, "ceph-id", "", "with -read-ceph: the Ceph user Ceph's tools authenticate as (their --id)")
		fs.StringVar(&c.cephTools.Keyring, "ceph-keyring", "", "with -read-ceph: that user's keyring file (their --keyring)")
		fs.Func("ceph-command-prefix", `with -read-ceph: a command that runs Ceph's tools elsewhere, split at spaces, e.g. "kubectl exec -i -n rook-ceph deploy/rook-ceph-tools --"`, func(v string) error {
			c.cephTools.Prefix = strings.Fields(v)
			return nil
		})
	}
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

// clusterConfig is the Ceph CSI config of -ceph-config (empty without it).
func (c *common) clusterConfig() (ceph.ClusterConfig, error) {
	if c.cephConfig == "" {
		return ceph.ClusterConfig{}, nil
	}
	b, err := os.ReadFile(c.cephConfig)
	if err != nil {
		return ceph.ClusterConfig{}, err
	}
	cfg, err := ceph.ParseClusterConfig(b)
	if err != nil {
		return ceph.ClusterConfig{}, fmt.Errorf("-ceph-config %s: %w", c.cephConfig, err)
	}
	return cfg, nil
}

func (c *common) logger(stderr io.Writer) klog.Logger {
	if !c.verbose {
		return klog.Background().V(100)
	}
	return newStderrLogger(stderr)
}

// clientFor builds a client as kubectl does from a kubeconfig path,
// $KUBECONFIG, ~/.kube/config or the in-cluster configuration, and a context
// of it ("" for the current one), with a client-side rate limit of qps
// requests a second and bursts of burst (client-go's defaults, 5 and 10,
// when 0).
func clientFor(kubeconfig, context string, qps float32, burst int) (kubernetes.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = qps, burst
	return kubernetes.NewForConfig(cfg)
}

func klog0() klog.Logger { return klog.Background().V(100) }

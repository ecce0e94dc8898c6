package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/apply/cephtool"
	"github.com/csimigrate/csimigrate/apply/vcenter"
	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// planOptions are plan's flags.
type planOptions struct {
	common
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
	ceph     cephToolFlags
	vsphere  vsphereFlags
	tr       *translate.Translator
	// vcenter and mappings are what -read-vsphere connected to and read.
	vcenter  *vcenter.Client
	mappings map[string]string
	// sourceChanged are -source-changed's objects.
	sourceChanged rewrite.ChangedSources
	// online is -online: the plan of rewrite -apply -online.
	online bool
}

const planSummary = "Reports, per volume, whether it can be migrated and why not; the Ceph CSI config map to create;\n" +
	"the Secrets to add or derive (names and fields, never values); the StorageClasses to recreate; hazards;\n" +
	"inline volumes of pods and workloads; and the feature-gate steps for the cluster's version. Every check\n" +
	"csimigrate rewrite -apply makes is made here. Exits 1 when something blocks the migration."

func runPlan(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runCommand("plan", planSummary, &planOptions{}, args, stdin, stdout, stderr)
}

func (o *planOptions) register(fs *flag.FlagSet) {
	o.common.register(fs, "table", "wide", "json", "yaml", "ceph-csi")
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
	registerSourceChanged(fs, &o.sourceChanged)
	fs.BoolVar(&o.online, "online", false, "plan for rewrite -apply -online: a volume in use is then a warning where the release still migrates its plugin on the nodes (the rewrite checks each node), not a blocker")
	fs.BoolVar(&o.readSecrets, "read-secrets", true, "with -live: read Secrets to check the fields migration needs (values are never printed)")
	fs.BoolVar(&o.readCeph, "read-ceph", false, "read each in-tree RBD image and CephFS subvolume from Ceph (with Ceph's tools, as -ceph-conf, -ceph-id, -ceph-keyring and -ceph-command-prefix say) to tell what rewrite -apply -adopt makes of it, instead of predicting it from its class or path (Ceph's volumes module records a legacy subvolume's metadata under /volumes/_legacy the first time it is asked, as on Ceph CSI's first call)")
	o.ceph.register(fs, "-read-ceph")
	o.vsphere.register(fs, true)
}

func (o *planOptions) complete(fs *flag.FlagSet) error {
	if err := noArgs(fs.Args()); err != nil {
		return err
	}
	o.liveByDefault()
	o.vsphere.complete(fs)
	// The nodes: their kubelets' versions (and, with -read-vsphere, their
	// virtual machines).
	o.readNodes = true
	var err error
	o.tr, err = o.translator()
	return err
}

func (o *planOptions) validate() error {
	if o.ceph.given() && !o.readCeph {
		return errors.New("-ceph-conf, -ceph-id, -ceph-keyring and -ceph-command-prefix only with -read-ceph")
	}
	if err := o.vsphere.validate(o.live); err != nil {
		return err
	}
	return o.common.validate()
}

// planner is the plan's planner for the options.
func (o *planOptions) planner(stderr io.Writer) *plan.Planner {
	topo, _ := o.vsphereTopology()
	opts := plan.Options{VSphereKeys: []string{topo.ZoneKey, topo.RegionKey}, KubernetesMinor: o.k8sMinor, ServerVersion: o.serverVersion, WriterHolder: o.writerHolder,
		CephConfigWarnings: o.cephWarnings, CephCSINamespace: o.cephCSINamespace, VSphereMappings: o.mappings, Drivers: o.drivers, SourceChanged: o.sourceChanged, Online: o.online, Namespace: o.scope()}
	if o.vcenter != nil {
		opts.VCenter = o.vcenter
	}
	if o.readCeph {
		tools := o.ceph.tools
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
	return plan.New(o.tr, o.logger(stderr), opts)
}

func (o *planOptions) run(stdin io.Reader, stdout, stderr io.Writer) int {
	if err := o.spoolStdin(stdin); err != nil {
		fmt.Fprintf(stderr, "csimigrate plan: %v\n", err)
		return exitInput
	}
	defer o.cleanup()
	if o.vsphere.read {
		if err := o.openVCenter(stderr); err != nil {
			fmt.Fprintf(stderr, "csimigrate plan: -read-vsphere: %v\n", err)
			return exitInput
		}
		defer o.vcenter.Close()
	}
	if o.live {
		// The cluster's own release, as kubectl version reads it, unless
		// -kubernetes-version names another (the plan then says so).
		if err := o.readServerVersion(); err != nil {
			fmt.Fprintf(stderr, "csimigrate plan: %v\n", err)
			return exitInput
		}
	} else if v := dumpServerVersion(o.files); v != "" {
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
	for _, r := range dumpListed(o.files) {
		pl.Listed(r)
	}
	// From files, the PVs in a second pass, once claims, classes and
	// secrets are known; -live lists PVs last.
	passes := []plan.Phase{plan.PhaseOthers, plan.PhasePVs}
	if o.live {
		passes = passes[:1]
	}
	for i, phase := range passes {
		if !o.live {
			pl.SetPhase(phase)
		}
		report := stderr
		if i > 0 {
			report = io.Discard // said once
		}
		if err := o.read(stdin, report, pl); err != nil {
			fmt.Fprintf(stderr, "csimigrate plan: %v\n", err)
			return exitInput
		}
	}
	report := pl.Finish()
	localizePlan(report)
	var err error
	switch o.output {
	case "json":
		err = writeJSON(stdout, report)
	case "yaml":
		err = writeYAML(stdout, report)
	case "ceph-csi":
		err = writeCephCSIObjects(stdout, stderr, report)
	case "wide":
		err = writePlanTable(stdout, report, true, o.sample)
	default:
		err = writePlanTable(stdout, report, false, o.sample)
	}
	if o.sample && (o.output == "json" || o.output == "yaml") {
		fmt.Fprintln(stderr, sampleNote)
	}
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate plan: writing the output: %v\n", err)
		return exitOutput
	}
	if report.Blocked {
		return exitBlocked
	}
	return exitOK
}

// openVCenter connects to vCenter as the driver's configuration says and,
// with -live, reads the driver's migration mappings.
func (o *planOptions) openVCenter(stderr io.Writer) error {
	var client kubernetes.Interface
	if o.live {
		c, err := clientFor(o.kubeconfig, o.context, 50, 100)
		if err != nil {
			return err
		}
		client = c
	}
	var err error
	o.vcenter, o.mappings, err = o.vsphere.open(context.Background(), client, o.logger(stderr))
	return err
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

// hazard is a row of the plan's hazards: the object it concerns and the
// finding.
type hazard struct {
	object string
	f      plugin.Finding
}

// planHazards are the plan's hazard rows, cluster-wide then per volume.
func planHazards(p *plan.Plan) []hazard {
	var hazards []hazard
	for _, f := range p.Hazards {
		obj := f.Object
		if obj == "" {
			obj = "cluster"
		}
		hazards = append(hazards, hazard{obj, f})
	}
	for _, v := range p.Volumes {
		for _, f := range v.Findings {
			hazards = append(hazards, hazard{v.Name, f})
		}
	}
	for _, c := range p.StorageClasses {
		if c.Kept != nil {
			hazards = append(hazards, hazard{"storageclass/" + c.Name, *c.Kept})
		}
	}
	return hazards
}

// writeVolumeTables writes the PVs' table and, where there are Ceph or
// vSphere volumes, the table of their forms after migration.
// A plan's table is read in a terminal: by default each table has short
// columns and the long texts (reasons, remedies, notes) follow it, wrapped,
// one block per row; -o wide puts them in the table as columns.

// textWidth is where the long texts of the default table wrap.
const textWidth = 120

// table is one table of the plan: a title, the columns and rows of short
// cells, and per row its long texts (label, text).
type table struct {
	title   string
	columns []string
	rows    [][]string
	texts   [][][2]string
}

func (t *table) add(cells []string, texts ...[2]string) {
	t.rows = append(t.rows, cells)
	t.texts = append(t.texts, texts)
}

// write writes the table: in wide form with one column per text label,
// else with the texts below it, each row's as a block.
func (t *table) write(w io.Writer, wide bool, textColumns ...string) {
	if len(t.rows) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, t.title)
	cols := t.columns
	if wide {
		cols = append(slices.Clone(cols), textColumns...)
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for i, r := range t.rows {
		cells := r
		if wide {
			cells = slices.Clone(r)
			for _, txt := range t.texts[i] {
				cells = append(cells, dash(txt[1]))
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	if wide {
		return
	}
	first := true
	for i, r := range t.rows {
		for j, txt := range t.texts[i] {
			if txt[1] == "" {
				continue
			}
			if first {
				fmt.Fprintln(w)
				first = false
			}
			// The row's first text names the row; the others follow it.
			label := "    " + txt[0]
			if j == 0 {
				label = strings.TrimSpace("  " + r[0] + " " + txt[0])
				label = "  " + label
			}
			fmt.Fprint(w, wrap(label+": "+txt[1], textWidth, "      "))
		}
	}
}

// wrap breaks s at spaces into lines of at most width bytes where it can,
// each after the first starting with indent; it ends with a newline.
func wrap(s string, width int, indent string) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Split(s, " ") {
		switch {
		case i == 0:
		case line+1+len(word) > width && line > len(indent):
			b.WriteString("\n" + indent)
			line = len(indent)
		default:
			b.WriteByte(' ')
			line++
		}
		b.WriteString(word)
		line += len(word)
	}
	b.WriteByte('\n')
	return b.String()
}

// writePlanTable writes the plan as tables, the long texts below each
// table, or with wide in it.
func writePlanTable(out io.Writer, p *plan.Plan, wide, sample bool) error {
	w := &stickyWriter{w: out}
	result := "RESULT"
	if sample {
		note := sampleNote + "\n"
		if !wide {
			note = wrap(sampleNote, textWidth, "")
		}
		fmt.Fprintf(w, "%s\n", note)
		result = "RESULT (of the sample, not your cluster)"
	}
	if p.ServerVersion != "" {
		// The release read from the cluster, first: every step below is
		// that release's (or the one asked, which a hazard then names).
		fmt.Fprintf(w, "KUBERNETES: the API server runs %s; the plan is for 1.%d\n\n", p.ServerVersion, p.KubernetesMinor)
	}
	writeRescue(w, p, wide)
	vols := table{title: "PERSISTENT VOLUMES", columns: []string{"NAME", "PLUGIN", "DRIVER", "MIGRATABLE", "CLAIM", "IN USE BY"}}
	forms := table{title: "\nVOLUMES AFTER MIGRATION (native: the CSI driver's own volume, rewrite -apply -adopt; migration-handle, static: what the driver serves for them)",
		columns: []string{"NAME", "FORM", "FEATURES"}}
	if !wide {
		forms.title = "\nVOLUMES AFTER MIGRATION (FEATURES: what the CSI driver serves; native: with rewrite -apply -adopt)"
	}
	for _, v := range p.Volumes {
		vols.add([]string{v.Name, v.Plugin, v.Driver, yesNo(v.Migratable), dash(v.Claim), dash(strings.Join(v.InUseBy, ","))}, [2]string{"", v.Reason})
		if v.Form != "" {
			forms.add([]string{v.Name, v.Form, strings.Join(v.Features, ", ")}, [2]string{"", strings.Join(v.FormWhy, "; ")})
		}
	}
	vols.write(w, wide, "REASON")
	forms.write(w, wide, "WHY")
	inline := table{title: "\nINLINE VOLUMES (in pods and workloads' pod templates)", columns: []string{"WORKLOAD", "VOLUME", "PLUGIN", "MIGRATABLE", "ALSO IN"}}
	for _, v := range p.InlineVolumes {
		reason := v.Reason
		if v.Claim != "" {
			reason += " (csimigrate translate prints them)"
		}
		inline.add([]string{v.Workload, v.Volume, v.Plugin, yesNo(v.Migratable), dash(strings.Join(v.Via, ", "))}, [2]string{v.Volume, reason})
	}
	inline.write(w, wide, "REASON")
	templates := table{title: "\nCLAIM TEMPLATES (StatefulSets' volumeClaimTemplates of in-tree classes)", columns: []string{"STATEFULSET", "TEMPLATE", "CLASS", "MIGRATABLE"}}
	for _, v := range p.ClaimTemplates {
		templates.add([]string{v.StatefulSet, v.Template, v.StorageClass, yesNo(v.Migratable)}, [2]string{v.Template, v.Reason})
	}
	templates.write(w, wide, "NOTE")
	writeVCenter(w, p.VCenter, wide)
	hazards := table{title: "\nHAZARDS", columns: []string{"OBJECT", "SEVERITY", "CODE"}}
	for _, h := range planHazards(p) {
		hazards.add([]string{h.object, string(h.f.Severity), h.f.Code}, [2]string{h.f.Code, h.f.Message}, [2]string{"remedy", h.f.Remedy})
	}
	hazards.write(w, wide, "MESSAGE", "REMEDY")
	classes := table{title: "\nSTORAGE CLASSES (immutable: delete and recreate with the same name)", columns: []string{"NAME", "FROM", "TO", "MIGRATABLE", "CODES"}}
	for _, s := range p.StorageClasses {
		classes.add([]string{s.Name, s.From, dash(s.To), yesNo(s.Migratable), dash(strings.Join(s.Codes, ","))}, [2]string{"", s.Reason})
	}
	classes.write(w, wide, "NOTE")
	if err := writeKept(w, p); err != nil {
		return err
	}
	secrets := table{title: "\nSECRETS (values are never shown)", columns: []string{"SECRET", "ACTION", "FIELDS", "FROM"}}
	for _, s := range p.Secrets {
		secrets.add([]string{s.Namespace + "/" + s.Name, s.Action, strings.Join(s.Fields, ","), dash(s.From)}, [2]string{"", s.Reason})
	}
	secrets.write(w, wide, "WHY")
	if err := writeCephConfig(w, p.CephCSIConfig); err != nil {
		return err
	}
	if len(p.FeatureGates) > 0 {
		fmt.Fprintln(w, "\nFEATURE GATES")
		for i, s := range p.FeatureGates {
			step := fmt.Sprintf("%d. %s", i+1, s)
			if wide {
				fmt.Fprintln(w, step)
			} else {
				fmt.Fprint(w, wrap(step, textWidth, "   "))
			}
		}
	}
	switch {
	case p.Blocked:
		fmt.Fprintln(w, "\n"+result+": BLOCKED: resolve the items marked NO before migrating")
	case nothingToMigrate(p):
		fmt.Fprintln(w, "\n"+result+": nothing to migrate: no in-tree PVs, classes or inline volumes")
	default:
		fmt.Fprintln(w, "\n"+result+": ready to migrate")
	}
	return w.err
}

// writeCephCSIObjects writes, for kubectl create -f, the objects that give
// Ceph CSI the cluster entries it lacks, as its deployment keeps them: the
// ceph-csi-operator's (with its Drivers where Ceph CSI is not installed),
// or the config map with its entries kept and the missing ones added. A
// Helm release's values, or a deployment not known, it names on stderr.
func writeCephCSIObjects(stdout, stderr io.Writer, p *plan.Plan) error {
	for _, c := range p.CephCSIConfig {
		switch {
		case c.Reason != "":
			fmt.Fprintf(stderr, "csimigrate plan: where %s reads its cluster entries is not known: %s\n", strings.Join(c.Drivers, ", "), c.Reason)
		case len(c.Missing) == 0:
		case c.HelmValues != "":
			fmt.Fprintf(stderr, "csimigrate plan: Helm release %s (namespace %s) keeps the entries of %s: give it the csiConfig value csimigrate plan prints (helm upgrade --reuse-values -f)\n",
				c.HelmRelease, c.Namespace, strings.Join(c.Drivers, ", "))
		case c.ConfigMapMerged != nil:
			if err := writeYAML(stdout, c.ConfigMapMerged); err != nil {
				return err
			}
		default:
			for _, o := range c.Objects {
				if err := writeYAML(stdout, o); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// stickyWriter keeps the first error of its writes and writes nothing
// after it.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(b []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(b)
	s.err = err
	return n, err
}

// writeVCenter writes what the plan read from vCenter: its version, its
// hosts and the nodes' virtual machines.
func writeVCenter(w io.Writer, vc *plan.VCenterReport, wide bool) {
	if vc == nil {
		return
	}
	fmt.Fprintf(w, "\nVCENTER %s (API %s, build %s)\n", vc.Version, dash(vc.APIVersion), dash(vc.Build))
	hosts := table{title: "ESXI HOSTS", columns: []string{"HOST", "VERSION"}}
	for _, h := range vc.Hosts {
		hosts.add([]string{h.Name, dash(h.Version)})
	}
	hosts.write(w, wide)
	nodes := table{title: "NODES (their virtual machines, by providerID)", columns: []string{"NODE", "VM", "HARDWARE", "BIOS UUID"}}
	for _, n := range vc.Nodes {
		nodes.add([]string{n.Node, dash(n.VM), dash(n.HardwareVersion), dash(n.UUID)})
	}
	nodes.write(w, wide)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeCephConfig writes, for each Ceph CSI deployment, where its drivers
// read their cluster entries and the missing entries in the form that
// lasts there.
func writeCephConfig(w io.Writer, configs []plan.CephCSIConfigPlan) error {
	for _, c := range configs {
		where := c.Namespace + "/" + c.ConfigMap + ", key " + c.Key
		switch {
		case c.Reason != "":
			fmt.Fprintf(w, "\nCEPH CSI CONFIG of %s: not known\n", strings.Join(c.Drivers, ", "))
			fmt.Fprint(w, wrap("  "+c.Reason, textWidth, "    "))
			continue
		case c.Deployment == plan.DeploymentHelm:
			where = "Helm release " + c.HelmRelease + " (namespace " + c.Namespace + "), value csiConfig, rendered into " + where
		case c.Deployment == plan.DeploymentOperator:
			where = "the ceph-csi-operator's ClientProfiles and CephConnections in " + c.Namespace + ", rendered into " + where
		}
		fmt.Fprintf(w, "\nCEPH CSI CONFIG of %s (%s)\n", strings.Join(c.Drivers, ", "), c.Deployment)
		if c.Install {
			fmt.Fprint(w, wrap("  not installed: the cluster has no "+strings.Join(c.Drivers, " or ")+" and nothing of Ceph CSI's. Install it with the ceph-csi-operator "+
				"(Ceph CSI v3.18 deprecates its Helm charts and manifests for it) in namespace "+c.Namespace+", then create the objects below: a Driver deploys each "+
				"driver, and the operator renders each ClientProfile (named by the clusterID the rewritten PVs carry) with its CephConnection (the volumes' "+
				"monitors) into "+c.ConfigMap+". The rewritten PVs and classes name the Secrets listed under SECRETS.", textWidth, "    "))
		}
		fmt.Fprint(w, wrap("  read from: "+where, textWidth, "    "))
		if len(c.Served) > 0 {
			fmt.Fprint(w, wrap("  serves already: "+strings.Join(c.Served, ", "), textWidth, "    "))
		}
		if len(c.Missing) == 0 {
			continue
		}
		var ids []string
		for _, e := range c.Missing {
			ids = append(ids, e.ClusterID)
		}
		fmt.Fprint(w, wrap("  missing: "+strings.Join(ids, ", ")+" (the volumes that need them are blocked until it serves them)", textWidth, "    "))
		switch {
		case c.HelmValues != "":
			fmt.Fprintf(w, "  add with: helm upgrade %s <chart> -n %s --reuse-values -f <this file>\n", c.HelmRelease, c.Namespace)
			fmt.Fprintln(w, c.HelmValues)
		case c.ConfigMapMerged != nil:
			fmt.Fprintln(w, "  the map with its entries kept and the missing ones added (kubectl apply -f):")
			if err := writeYAML(w, c.ConfigMapMerged); err != nil {
				return err
			}
		case len(c.Objects) > 0:
			fmt.Fprintln(w, "  create (kubectl create -f); the operator renders them into the map:")
			for _, o := range c.Objects {
				if err := writeYAML(w, o); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// writeKept writes, for each PV and class a reconciler keeps, who keeps it,
// where the change belongs, and the object as that source should hold it
// after the rewrite: the manifest to commit, or to render from the chart.
func writeKept(w io.Writer, p *plan.Plan) error {
	type kept struct {
		ref     string
		keepers []rewrite.Keeper
		source  any
	}
	var all []kept
	for _, v := range p.Volumes {
		if len(v.KeptBy) > 0 {
			k := kept{ref: "pv/" + v.Name, keepers: v.KeptBy}
			if v.Source != nil {
				k.source = v.Source
			}
			all = append(all, k)
		}
	}
	for _, c := range p.StorageClasses {
		if len(c.KeptBy) > 0 {
			k := kept{ref: "storageclass/" + c.Name, keepers: c.KeptBy}
			if c.Source != nil {
				k.source = c.Source
			}
			all = append(all, k)
		}
	}
	if len(all) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nKEPT BY RECONCILERS (a change made only in the cluster is undone: change the source, then run with -source-changed)")
	for _, k := range all {
		for _, kp := range k.keepers {
			fmt.Fprintf(w, "%s: %s (%s)\n  change: %s\n", k.ref, kp, strings.Join(kp.Evidence, ", "), kp.Source)
		}
		if k.source == nil {
			fmt.Fprintln(w, "  (no form to commit: it is not migratable yet)")
			continue
		}
		fmt.Fprintln(w, "  the source's form after the rewrite:")
		var b strings.Builder
		if err := writeYAML(&b, k.source); err != nil {
			return err
		}
		for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
			fmt.Fprintln(w, "    "+line)
		}
	}
	return nil
}

// nothingToMigrate reports whether the plan found nothing in-tree: no PV,
// StorageClass, inline volume or claim template of a plugin it migrates.
func nothingToMigrate(p *plan.Plan) bool {
	return len(p.Volumes) == 0 && len(p.StorageClasses) == 0 && len(p.InlineVolumes) == 0 && len(p.ClaimTemplates) == 0
}

// readServerVersion reads the live API server's version; without
// -kubernetes-version, the plan is for its release.
func (o *planOptions) readServerVersion() error {
	client, err := clientFor(o.kubeconfig, o.context, 50, 100)
	if err != nil {
		return noCluster(err)
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

// sampleNote is the first line of every output of the embedded sample.
const sampleNote = "SAMPLE: this is csimigrate's embedded sample cluster, not yours. Plan yours with csimigrate plan (the current kubeconfig context, as kubectl) or csimigrate plan -f cluster.json (from csimigrate dump)."

package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
)

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

// WritePlanTable writes the plan as tables, the long texts below each
// table, or with wide in it.
func WritePlanTable(out io.Writer, p *plan.Plan, wide, sample bool) error {
	w := &stickyWriter{w: out}
	result := "RESULT"
	if sample {
		note := SampleNote + "\n"
		if !wide {
			note = Wrap(SampleNote, TextWidth, "")
		}
		fmt.Fprintf(w, "%s\n", note)
		result = "RESULT (of the sample, not your cluster)"
	}
	if p.ServerVersion != "" {
		// The release read from the cluster, first: every step below is
		// that release's (or the one asked, which a hazard then names).
		fmt.Fprintf(w, "KUBERNETES: the API server runs %s; the plan is for 1.%d\n\n", p.ServerVersion, p.KubernetesMinor)
	}
	WriteRescue(w, p, wide)
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
				fmt.Fprint(w, Wrap(step, TextWidth, "   "))
			}
		}
	}
	switch {
	case p.Blocked:
		fmt.Fprintln(w, "\n"+result+": BLOCKED: resolve the items marked NO before migrating")
	case NothingToMigrate(p):
		fmt.Fprintln(w, "\n"+result+": nothing to migrate: no in-tree PVs, classes or inline volumes")
	default:
		fmt.Fprintln(w, "\n"+result+": ready to migrate")
	}
	return w.err
}

// WriteCephCSIObjects writes, for kubectl create -f, the objects that give
// Ceph CSI the cluster entries it lacks, as its deployment keeps them: the
// ceph-csi-operator's (with its Drivers where Ceph CSI is not installed),
// or the config map with its entries kept and the missing ones added. A
// Helm release's values, or a deployment not known, it names on stderr.
func WriteCephCSIObjects(stdout, stderr io.Writer, p *plan.Plan) error {
	for _, c := range p.CephCSIConfig {
		switch {
		case c.Reason != "":
			fmt.Fprintf(stderr, "csimigrate plan: where %s reads its cluster entries is not known: %s\n", strings.Join(c.Drivers, ", "), c.Reason)
		case len(c.Missing) == 0:
		case c.HelmValues != "":
			fmt.Fprintf(stderr, "csimigrate plan: Helm release %s (namespace %s) keeps the entries of %s: give it the csiConfig value csimigrate plan prints (helm upgrade --reuse-values -f)\n",
				c.HelmRelease, c.Namespace, strings.Join(c.Drivers, ", "))
		case c.ConfigMapMerged != nil:
			if err := WriteYAML(stdout, c.ConfigMapMerged); err != nil {
				return err
			}
		default:
			for _, o := range c.Objects {
				if err := WriteYAML(stdout, o); err != nil {
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

// writeCephConfig writes, for each Ceph CSI deployment, where its drivers
// read their cluster entries and the missing entries in the form that
// lasts there.
func writeCephConfig(w io.Writer, configs []plan.CephCSIConfigPlan) error {
	for _, c := range configs {
		where := c.Namespace + "/" + c.ConfigMap + ", key " + c.Key
		switch {
		case c.Reason != "":
			fmt.Fprintf(w, "\nCEPH CSI CONFIG of %s: not known\n", strings.Join(c.Drivers, ", "))
			fmt.Fprint(w, Wrap("  "+c.Reason, TextWidth, "    "))
			continue
		case c.Deployment == plan.DeploymentHelm:
			where = "Helm release " + c.HelmRelease + " (namespace " + c.Namespace + "), value csiConfig, rendered into " + where
		case c.Deployment == plan.DeploymentOperator:
			where = "the ceph-csi-operator's ClientProfiles and CephConnections in " + c.Namespace + ", rendered into " + where
		}
		fmt.Fprintf(w, "\nCEPH CSI CONFIG of %s (%s)\n", strings.Join(c.Drivers, ", "), c.Deployment)
		if c.Install {
			fmt.Fprint(w, Wrap("  not installed: the cluster has no "+strings.Join(c.Drivers, " or ")+" and nothing of Ceph CSI's. Install it with the ceph-csi-operator "+
				"(Ceph CSI v3.18 deprecates its Helm charts and manifests for it) in namespace "+c.Namespace+", then create the objects below: a Driver deploys each "+
				"driver, and the operator renders each ClientProfile (named by the clusterID the rewritten PVs carry) with its CephConnection (the volumes' "+
				"monitors) into "+c.ConfigMap+". The rewritten PVs and classes name the Secrets listed under SECRETS.", TextWidth, "    "))
		}
		fmt.Fprint(w, Wrap("  read from: "+where, TextWidth, "    "))
		if len(c.Served) > 0 {
			fmt.Fprint(w, Wrap("  serves already: "+strings.Join(c.Served, ", "), TextWidth, "    "))
		}
		if len(c.Missing) == 0 {
			continue
		}
		var ids []string
		for _, e := range c.Missing {
			ids = append(ids, e.ClusterID)
		}
		fmt.Fprint(w, Wrap("  missing: "+strings.Join(ids, ", ")+" (the volumes that need them are blocked until it serves them)", TextWidth, "    "))
		switch {
		case c.HelmValues != "":
			fmt.Fprintf(w, "  add with: helm upgrade %s <chart> -n %s --reuse-values -f <this file>\n", c.HelmRelease, c.Namespace)
			fmt.Fprintln(w, c.HelmValues)
		case c.ConfigMapMerged != nil:
			fmt.Fprintln(w, "  the map with its entries kept and the missing ones added (kubectl apply -f):")
			if err := WriteYAML(w, c.ConfigMapMerged); err != nil {
				return err
			}
		case len(c.Objects) > 0:
			fmt.Fprintln(w, "  create (kubectl create -f); the operator renders them into the map:")
			for _, o := range c.Objects {
				if err := WriteYAML(w, o); err != nil {
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
		if err := WriteYAML(&b, k.source); err != nil {
			return err
		}
		for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
			fmt.Fprintln(w, "    "+line)
		}
	}
	return nil
}

// NothingToMigrate reports whether the plan found nothing in-tree: no PV,
// StorageClass, inline volume or claim template of a plugin it migrates.
func NothingToMigrate(p *plan.Plan) bool {
	return len(p.Volumes) == 0 && len(p.StorageClasses) == 0 && len(p.InlineVolumes) == 0 && len(p.ClaimTemplates) == 0
}

// SampleNote is the first line of every output of the embedded sample.
const SampleNote = "SAMPLE: this is csimigrate's embedded sample cluster, not yours. Plan yours with csimigrate plan (the current kubeconfig context, as kubectl) or csimigrate plan -f cluster.json (from csimigrate dump)."

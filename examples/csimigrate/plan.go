package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/apply/cephtool"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/translate"
)

// The plan's report and finding codes (package plan's).
type (
	Plan              = plan.Plan
	VolumePlan        = plan.VolumePlan
	InlinePlan        = plan.InlinePlan
	ClaimTemplatePlan = plan.ClaimTemplatePlan
	StorageClassPlan  = plan.StorageClassPlan
	SecretPlan        = plan.SecretPlan
)

// Finding codes of the plan itself (package plan's).
const (
	FindingRewriteRefuses          = plan.FindingRewriteRefuses
	FindingClaimNotChecked         = plan.FindingClaimNotChecked
	FindingReclaimKept             = plan.FindingReclaimKept
	FindingSecretMissing           = plan.FindingSecretMissing
	FindingSecretsNotChecked       = plan.FindingSecretsNotChecked
	FindingClassSecretNeedsAdminId = plan.FindingClassSecretNeedsAdminId
	FindingSecretNotReady          = plan.FindingSecretNotReady
	FindingAccessModesChanged      = plan.FindingAccessModesChanged
)

// inlineRemedy is plan.InlineRemedy.
var inlineRemedy = plan.InlineRemedy

func claimKey(ns, name string) string { return ns + "/" + name }

func runPlan(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var pl *plan.Planner
	c, code, ok := setup("plan", "Reports, per volume, whether it can be migrated and why not; the Ceph CSI config map to create;\n"+
		"the Secrets to add or derive (names and fields, never values); the StorageClasses to recreate; hazards;\n"+
		"inline volumes of pods and workloads; and the feature-gate steps for the cluster's version. Every check\n"+
		"csimigrate rewrite -apply makes is made here. Exits 1 when something blocks the migration.",
		args, stdin, stderr, "table|json|yaml", func(c *common, tr *translate.Translator) Sink {
			topo, _ := c.vsphereTopology()
			opts := plan.Options{VSphereKeys: []string{topo.ZoneKey, topo.RegionKey}, KubernetesMinor: c.k8sMinor,
				CephConfigWarnings: c.cephWarnings, CephCSINamespace: c.cephCSINamespace}
			if c.readCeph {
				tools := c.cephTools
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
			}
			pl = plan.New(tr, c.logger(stderr), opts)
			if !c.live {
				// The PVs in a second pass, once claims, classes and
				// secrets are known; -live lists PVs last.
				pl.SetPhase(plan.PhaseOthers)
			}
			return pl
		})
	if !ok {
		return code
	}
	defer c.cleanup()
	if !c.live {
		pl.SetPhase(plan.PhasePVs)
		if err := c.read(stdin, io.Discard, pl); err != nil {
			fmt.Fprintf(stderr, "csimigrate plan: %v\n", err)
			return exitInput
		}
	}
	report := pl.Finish()
	var err error
	switch c.output {
	case "json":
		err = writeJSON(stdout, report)
	case "yaml":
		err = writeYAML(stdout, report)
	default:
		err = writePlanTable(stdout, report)
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

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

// planHazards are the plan's hazard rows, cluster-wide then per volume.
func planHazards(p *Plan) []string {
	var hazards []string
	for _, f := range p.Hazards {
		obj := "cluster"
		if strings.HasPrefix(f.Field, "Secret ") || strings.HasPrefix(f.Field, "StorageClass ") {
			obj = f.Field
		}
		hazards = append(hazards, fmt.Sprintf("%s\t%s\t%s\t%s\t%s", obj, f.Severity, f.Code, f.Message, f.Remedy))
	}
	for _, v := range p.Volumes {
		for _, f := range v.Findings {
			hazards = append(hazards, fmt.Sprintf("%s\t%s\t%s\t%s\t%s", v.Name, f.Severity, f.Code, f.Message, f.Remedy))
		}
	}
	return hazards
}

// writeVolumeTables writes the PVs' table and, where there are Ceph
// volumes, the table of their forms after migration.
func writeVolumeTables(tw *tabwriter.Writer, p *Plan) {
	fmt.Fprintln(tw, "PERSISTENT VOLUMES")
	fmt.Fprintln(tw, "NAME\tPLUGIN\tDRIVER\tMIGRATABLE\tCLAIM\tIN USE BY\tREASON")
	for _, v := range p.Volumes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Name, v.Plugin, v.Driver, yesNo(v.Migratable), dash(v.Claim), dash(strings.Join(v.InUseBy, ",")), dash(v.Reason))
	}
	tw.Flush()
	var forms []string
	for _, v := range p.Volumes {
		if v.Form != "" {
			forms = append(forms, fmt.Sprintf("%s\t%s\t%s\t%s", v.Name, v.Form, strings.Join(v.Features, ", "), dash(strings.Join(v.FormWhy, "; "))))
		}
	}
	if len(forms) > 0 {
		fmt.Fprintln(tw, "\nCEPH VOLUMES AFTER MIGRATION (native: Ceph CSI's own volume, rewrite -apply -adopt; migration-handle, static: what Ceph CSI serves for them)")
		fmt.Fprintln(tw, "NAME\tFORM\tFEATURES\tWHY")
		for _, f := range forms {
			fmt.Fprintln(tw, f)
		}
		tw.Flush()
	}
}

func writePlanTable(w io.Writer, p *Plan) error {
	cm := p.CephCSIConfigMap
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	writeVolumeTables(tw, p)
	if len(p.InlineVolumes) > 0 {
		fmt.Fprintln(tw, "\nINLINE VOLUMES (in pods and workloads' pod templates)")
		fmt.Fprintln(tw, "WORKLOAD\tVOLUME\tPLUGIN\tMIGRATABLE\tALSO IN\tREASON")
		for _, v := range p.InlineVolumes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", v.Workload, v.Volume, v.Plugin, yesNo(v.Migratable), dash(strings.Join(v.Via, ", ")), dash(v.Reason))
		}
		tw.Flush()
	}
	if len(p.ClaimTemplates) > 0 {
		fmt.Fprintln(tw, "\nCLAIM TEMPLATES (StatefulSets' volumeClaimTemplates of in-tree classes)")
		fmt.Fprintln(tw, "STATEFULSET\tTEMPLATE\tCLASS\tMIGRATABLE\tNOTE")
		for _, v := range p.ClaimTemplates {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.StatefulSet, v.Template, v.StorageClass, yesNo(v.Migratable), v.Reason)
		}
		tw.Flush()
	}
	if hazards := planHazards(p); len(hazards) > 0 {
		fmt.Fprintln(tw, "\nHAZARDS")
		fmt.Fprintln(tw, "OBJECT\tSEVERITY\tCODE\tMESSAGE\tREMEDY")
		for _, h := range hazards {
			fmt.Fprintln(tw, h)
		}
		tw.Flush()
	}
	if len(p.StorageClasses) > 0 {
		fmt.Fprintln(tw, "\nSTORAGE CLASSES (immutable: delete and recreate with the same name)")
		fmt.Fprintln(tw, "NAME\tFROM\tTO\tMIGRATABLE\tNOTE")
		for _, s := range p.StorageClasses {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.From, dash(s.To), yesNo(s.Migratable), dash(s.Reason))
		}
		tw.Flush()
	}
	if len(p.Secrets) > 0 {
		fmt.Fprintln(tw, "\nSECRETS (values are never shown)")
		fmt.Fprintln(tw, "SECRET\tACTION\tFIELDS\tFROM\tWHY")
		for _, s := range p.Secrets {
			fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\n", s.Namespace, s.Name, s.Action, strings.Join(s.Fields, ","), dash(s.From), s.Reason)
		}
		tw.Flush()
	}
	if cm != nil {
		fmt.Fprintln(w, "\nCEPH CSI CONFIG MAP (create before enabling migration)")
		if err := writeYAML(w, cm); err != nil {
			return err
		}
	}
	if len(p.FeatureGates) > 0 {
		fmt.Fprintln(w, "\nFEATURE GATES")
		for i, s := range p.FeatureGates {
			fmt.Fprintf(w, "%d. %s\n", i+1, s)
		}
	}
	if p.Blocked {
		fmt.Fprintln(w, "\nRESULT: BLOCKED: resolve the items marked NO before migrating")
	} else {
		fmt.Fprintln(w, "\nRESULT: ready to migrate")
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

package rewritecmd

import (
	"io"
	"slices"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/input"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/output"
	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// planVerdicts are the plan's refusals of the input's in-tree PVs and
// StorageClasses (none: the plan would rewrite it), by name: what rewrite
// -apply refuses on the same cluster, which the review shows in place of the
// object's steps.
type planVerdicts struct {
	pvs, classes map[string]planVerdict
}

// planVerdict is why the plan blocks an object: its codes, in order, and the
// reasons with their remedies in the command's words.
type planVerdict struct {
	codes []string
	text  string
}

// reviewVerdicts plans the input as plan does (the PVs after everything
// else) with the review's translator and the writer's options it shares
// with -apply (-source-changed, -online), and keeps each
// blocked object's planVerdict.
func reviewVerdicts(c *cli.Common, tr *translate.Translator, w apply.Options, stdin io.Reader) (planVerdicts, error) {
	// The release of the cluster, as plan reads it (a dump records it).
	minor, version := 0, input.DumpServerVersion(c.Files)
	if c.Live {
		if client, err := cli.ClientFor(c.Kubeconfig, c.Context, 50, 100); err == nil {
			if v, err := client.Discovery().ServerVersion(); err == nil {
				version = v.GitVersion
			}
		}
	}
	if m, err := featuregate.ParseMinor(version); err == nil && version != "" {
		minor = m
	}
	pl := plan.New(tr, cli.Klog0(), plan.Options{Drivers: c.Drivers, SourceChanged: w.SourceChanged, Online: w.Online, Namespace: c.Scope(), KubernetesMinor: minor, ServerVersion: version})
	for _, r := range input.DumpListed(c.Files) {
		pl.Listed(r)
	}
	passes := []plan.Phase{plan.PhaseOthers, plan.PhasePVs}
	if c.Live {
		passes = passes[:1]
		// The Secrets too, as plan -live reads them: the verdict of a
		// volume depends on them.
		cc := *c
		cc.ReadSecrets = true
		c = &cc
	}
	for _, phase := range passes {
		if !c.Live {
			pl.SetPhase(phase)
		}
		if err := c.ReadInput(stdin, io.Discard, pl); err != nil {
			return planVerdicts{}, err
		}
	}
	return verdictsOf(pl.Finish(), false), nil
}

// verdictsOf are the plan's verdicts of the objects it blocks. With
// secretsUnread, a Secret the plan could not read is not a verdict (the
// writer reads each one it needs itself).
func verdictsOf(p *plan.Plan, secretsUnread bool) planVerdicts {
	v := planVerdicts{pvs: map[string]planVerdict{}, classes: map[string]planVerdict{}}
	for _, vp := range p.Volumes {
		if secretsUnread {
			vp.Findings = slices.DeleteFunc(slices.Clone(vp.Findings), func(f plugin.Finding) bool { return f.Code == plan.FindingSecretsNotChecked })
			if !slices.ContainsFunc(vp.Findings, func(f plugin.Finding) bool { return f.Severity == plugin.SeverityBlocker }) {
				continue
			}
		}
		if !vp.Migratable {
			v.pvs[vp.Name] = volumeVerdict(vp)
		}
	}
	for _, sp := range p.StorageClasses {
		if secretsUnread && slices.Equal(sp.Codes, []string{plan.FindingSecretsNotChecked}) {
			continue
		}
		if !sp.Migratable {
			codes := sp.Codes
			if len(codes) == 0 {
				codes = []string{string(rewrite.CodeNotTranslatable)}
			}
			v.classes[sp.Name] = planVerdict{codes: codes, text: sp.Reason}
		}
	}
	return v
}

// volumeVerdict is the planVerdict of a PV the plan does not call migratable:
// each Blocker finding with its code and remedy, or the plan's reason.
func volumeVerdict(vp plan.VolumePlan) planVerdict {
	var rs []*rewrite.Refusal
	for i := range vp.Findings {
		if f := &vp.Findings[i]; f.Severity == plugin.SeverityBlocker {
			rs = append(rs, rewrite.FindingRefusal(*f))
		}
	}
	r := rewrite.JoinRefusals(rs...)
	if r == nil {
		r = &rewrite.Refusal{Code: rewrite.CodeNotTranslatable, Reason: vp.Reason}
	}
	var codes []string
	for _, c := range r.Codes() {
		codes = append(codes, string(c))
	}
	return planVerdict{codes: codes, text: output.RefusalText(r)}
}

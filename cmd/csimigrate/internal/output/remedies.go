package output

import (
	"fmt"
	"strings"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
)

// The engine words its remedies without any program's flags and gives
// each as data (plugin.Action, with the object it concerns); the command
// words them with its own commands and flags here, one entry per action.
var commandRemedies = map[plugin.Action]func(object, engine string) string{
	plugin.ActionStopPods: func(string, string) string {
		return "stop them first (csimigrate plan lists them), or use -online where the plugin is migrated on their nodes"
	},
	plugin.ActionGiveInput: func(object, engine string) string {
		switch object {
		case "PersistentVolumeClaims":
			return "give the claims too: csimigrate dump > cluster.json reads them with everything else plan reads (or -live)"
		case "Secrets":
			return "give the secrets too: csimigrate dump > cluster.json writes them with their values left out (or -live with -read-secrets); values are never printed"
		case "CSIDrivers":
			return "give the CSI drivers too: kubectl get csidrivers,csinodes -o yaml (or -live)"
		case "CephCSIConfig":
			return "give where Ceph CSI reads its config too: kubectl get ds,configmaps -A -o yaml (with the ceph-csi-operator also drivers,clientprofiles,cephconnections), or -live"
		}
		return engine
	},
	plugin.ActionGiveCephAccess: func(_, engine string) string {
		return engine + ": run it with -ceph-conf, -ceph-id and -ceph-keyring (or -ceph-command-prefix)"
	},
	plugin.ActionSetVSphereTopology: func(string, string) string {
		return "run csimigrate with -vsphere-topology-categories matching the driver's [Labels] topology-categories (or -vsphere-legacy-topology)"
	},
	plugin.ActionChooseDriver: func(object, engine string) string {
		return engine + ": name it with -driver " + object + "=DRIVER"
	},
	plugin.ActionAddCephEntry: func(_, engine string) string {
		return engine + " (csimigrate plan -live prints it, as the deployment keeps it)"
	},
	plugin.ActionChangeSource: func(object, engine string) string {
		return engine + " (or run with -source-changed " + object + "); csimigrate plan prints the form to put there, under KEPT BY RECONCILERS"
	},
	plugin.ActionCreateSecret: func(_, engine string) string {
		return engine + " (csimigrate plan lists it under SECRETS)"
	},
}

// CommandRemedy is a remedy in the command's words.
func CommandRemedy(a plugin.Action, object, engine string) string {
	if word, ok := commandRemedies[a]; ok {
		return word(object, engine)
	}
	return engine
}

// LocalizePlan words every finding's remedy of a plan in the command's
// terms (the report is the command's own copy).
func LocalizePlan(p *plan.Plan) {
	for i := range p.Hazards {
		localizeFinding(&p.Hazards[i])
	}
	for i := range p.Volumes {
		for j := range p.Volumes[i].Findings {
			localizeFinding(&p.Volumes[i].Findings[j])
		}
	}
	for i := range p.StorageClasses {
		if f := p.StorageClasses[i].Kept; f != nil {
			c := *f
			localizeFinding(&c)
			p.StorageClasses[i].Kept = &c
		}
	}
}

func localizeFinding(f *plugin.Finding) {
	if f.Action != "" {
		f.Remedy = CommandRemedy(f.Action, f.ActsOn, f.Remedy)
	}
}

// RefusalText is a refusal's reason and remedy in the command's words.
//
// Each further reason (Also) follows with its code.
func RefusalText(r *rewrite.Refusal) string {
	s := r.Reason
	if remedy := CommandRemedy(r.Action, r.ActsOn, r.Remedy); remedy != "" {
		s += "; " + remedy
	}
	for _, o := range r.Also {
		s += "; also (" + string(o.Code) + "): " + RefusalText(o)
	}
	return s
}

// CodesText is a refusal's codes, joined by ", ".
func CodesText(r *rewrite.Refusal) string {
	var cs []string
	for _, c := range r.Codes() {
		cs = append(cs, string(c))
	}
	return strings.Join(cs, ", ")
}

// CommandError is an error of the writer (each of a joined error's on
// its own line) with its remedies in the command's words.
func CommandError(err error) string {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var lines []string
		for _, e := range joined.Unwrap() {
			lines = append(lines, CommandError(e))
		}
		return strings.Join(lines, "\n")
	}
	// The error's own words, from the data of the object, refusal or
	// state it is; any other error as it is.
	switch e := err.(type) {
	case *apply.ObjectError:
		return e.Object.Resource() + ": " + CommandError(e.Err)
	case *rewrite.Refusal:
		if e.Action != "" && e.Remedy != "" {
			return RefusalText(e)
		}
	case *apply.InProgressError:
		return fmt.Sprintf("ConfigMap %s holds %s of %s in progress; finish it first (%s), nothing is done with it here", e.ConfigMap, e.Run.What(), e.Object.Resource(), directionCommand(e.Run))
	}
	return err.Error()
}

// directionCommand is the command that runs a direction.
func directionCommand(d apply.Direction) string {
	run := "csimigrate rewrite -apply"
	if d.IsUndo() {
		run += " -undo"
	}
	if d.AdoptsCSI() {
		run += " -adopt -adopt-csi"
	}
	return run
}

// DirectionOf is the writer's direction of -undo and -adopt -adopt-csi.
func DirectionOf(undo, adoptCSI bool) apply.Direction {
	d := apply.Rewrite
	if adoptCSI {
		d = apply.AdoptCSI
	}
	if undo {
		d = d.Reverse()
	}
	return d
}

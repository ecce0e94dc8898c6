package plan

import (
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
)

// FindingInterruptedRun: a rewrite -apply (or the controller) saved an
// object's replacement and stopped before it finished; running it again
// resumes from the saved state. A Blocker where the object is gone (deleted,
// its replacement not created yet: its claim shows Lost and its pods cannot
// mount), a Warning where it still exists.
const FindingInterruptedRun = "InterruptedRun"

// runInput are the writer's saved states in the input (ConfigMaps of
// rewrite.AnnRunOf and rewrite.AnnRunOfClass), by the object they name, and
// whether that object was read.
type runInput struct {
	pvs, classes map[string]*savedRun
}

// savedRun is one saved state: its ConfigMap ("namespace/name"), and what
// the input has of the object it names.
type savedRun struct {
	cm   string
	seen bool
}

// addState records c when it is a writer's saved state.
func (r *runInput) addState(c *v1.ConfigMap) {
	if c.Labels["app.kubernetes.io/managed-by"] != "csimigrate" {
		return
	}
	if r.pvs == nil {
		r.pvs, r.classes = map[string]*savedRun{}, map[string]*savedRun{}
	}
	if pv := c.Annotations[rewrite.AnnRunOf]; pv != "" {
		r.pvs[pv] = &savedRun{cm: c.Namespace + "/" + c.Name}
	}
	if sc := c.Annotations[rewrite.AnnRunOfClass]; sc != "" {
		r.classes[sc] = &savedRun{cm: c.Namespace + "/" + c.Name}
	}
}

// resumes reports whether a saved state names PV name: a run resumes it,
// whatever its object says now (being deleted by that run included).
func (r *runInput) resumes(name string) bool { return r.pvs[name] != nil }

// saw notes that the input has the PV or class name.
func (r *runInput) saw(m map[string]*savedRun, name string) {
	if s := m[name]; s != nil {
		s.seen = true
	}
}

// settleRuns adds a finding for each object a run left half-done: a
// Blocker hazard for one that is gone (with its claim, which shows Lost),
// a Warning for one that exists; each says to run the rewrite again.
func (p *Planner) settleRuns(plan *Plan) {
	if len(p.runs.pvs)+len(p.runs.classes) == 0 {
		return
	}
	for _, v := range plan.Volumes {
		// (An in-tree PV read before the state, in one pass.)
		p.runs.saw(p.runs.pvs, v.Name)
	}
	claimOf := map[string]string{}
	for key, c := range p.claims.slim {
		if s := p.runs.pvs[c.volumeName]; s != nil && !s.seen {
			claimOf[c.volumeName] = key
		}
	}
	add := func(kind, name string, s *savedRun) {
		obj := rewrite.PVRef(name)
		if kind == "StorageClass" {
			obj = rewrite.ClassRef(name)
		}
		f := plugin.Finding{Code: FindingInterruptedRun, Severity: plugin.SeverityWarning, Object: obj.Resource(), Field: "ConfigMap " + s.cm,
			Message: fmt.Sprintf("a rewrite of %s %s was interrupted: its replacement is saved in ConfigMap %s, and it has not finished", kind, name, s.cm),
			Remedy:  "run the rewrite again: it resumes from the saved state (do not delete the ConfigMap)"}
		if !s.seen {
			f.Severity = plugin.SeverityBlocker
			f.Message = fmt.Sprintf("an interrupted rewrite deleted %s %s and has not created its replacement yet (saved in ConfigMap %s)", kind, name, s.cm)
			if c := claimOf[name]; c != "" {
				f.Message += fmt.Sprintf("; its claim %s shows Lost and its pods cannot mount it until then", c)
			}
			plan.Blocked = true
		}
		plan.Hazards = append(plan.Hazards, f)
	}
	for _, name := range slices.Sorted(maps.Keys(p.runs.pvs)) {
		add("PersistentVolume", name, p.runs.pvs[name])
	}
	for _, name := range slices.Sorted(maps.Keys(p.runs.classes)) {
		add("StorageClass", name, p.runs.classes[name])
	}
}

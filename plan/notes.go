package plan

import "github.com/csimigrate/csimigrate/plugin"

// A volumeNote is what a phase that runs once every object is read
// (Finish) concludes about one planned volume. The phases read the plan
// and return their notes; annotate alone writes them into the volumes, so
// that how a volume is blocked, and which reason it shows, is one rule.
type volumeNote struct {
	// pv names the volume: its PV's name.
	pv string
	// inUseBy names the pods that use the volume.
	inUseBy []string
	// form, when set, replaces the volume's form (decided again with the
	// other PVs that name the same volume).
	form *formNote
	// formWhy is added to the volume's FormWhy.
	formWhy []string
	// adoptClusterID, when set, is the clusterID an adoption names.
	adoptClusterID string
	// findings are added to the volume's.
	findings []plugin.Finding
	// block, when set, makes the volume (and the plan) not migratable;
	// it is the volume's reason unless the volume has one: the first
	// reason found is the one shown.
	block string
}

// A formNote is a volume's form, as VolumePlan's Form, Features and
// FormWhy.
type formNote struct {
	form     string
	features []string
	why      []string
}

// blockedBy is the note that f, a blocker of PV pv's volume, adds.
func blockedBy(pv string, f plugin.Finding) volumeNote {
	return volumeNote{pv: pv, findings: []plugin.Finding{f}, block: f.Message}
}

// volumeIndex finds a planned volume by its PV's name (the first, should
// the input name a PV twice).
type volumeIndex map[string]int

// indexVolumes is the index of plan's volumes.
func indexVolumes(plan *Plan) volumeIndex {
	at := make(volumeIndex, len(plan.Volumes))
	for i := len(plan.Volumes) - 1; i >= 0; i-- {
		at[plan.Volumes[i].Name] = i
	}
	return at
}

// annotate writes notes into plan's volumes, in their order.
func (at volumeIndex) annotate(plan *Plan, notes []volumeNote) {
	for _, n := range notes {
		i, ok := at[n.pv]
		if !ok {
			continue
		}
		v := &plan.Volumes[i]
		if n.inUseBy != nil {
			v.InUseBy = n.inUseBy
		}
		if f := n.form; f != nil {
			v.Form, v.Features, v.FormWhy = f.form, f.features, f.why
		}
		v.FormWhy = append(v.FormWhy, n.formWhy...)
		if n.adoptClusterID != "" {
			v.AdoptClusterID = n.adoptClusterID
		}
		v.Findings = append(v.Findings, n.findings...)
		if n.block != "" {
			v.Migratable = false
			if v.Reason == "" {
				v.Reason = n.block
			}
			plan.Blocked = true
		}
	}
}

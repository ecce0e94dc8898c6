package plan

import (
	"strings"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// keptFinding is the finding for the keepers of o, a kind's object, with
// the keepers; nil when nothing keeps it (most objects: their metadata is
// read once, nothing else is built).
func (p *Planner) keptFinding(kind string, o metav1.Object) (*plugin.Finding, []rewrite.Keeper) {
	keepers := rewrite.KeepersOf(o)
	if len(keepers) == 0 {
		return nil, nil
	}
	changed := p.opts.SourceChanged.Has(kind, o.GetNamespace(), o.GetName())
	if err := rewrite.KeptRefusal(kind, o, changed); err != nil {
		return &plugin.Finding{Code: FindingKeptByReconciler, Severity: plugin.SeverityBlocker, Field: "metadata",
			Message: "the rewrite would refuse it: " + reasonOf(err), Remedy: remedyOf(err), Action: actionOf(err), ActsOn: actsOnOf(err)}, keepers
	}
	var by, where []string
	for _, k := range keepers {
		by = append(by, k.String()+" ("+strings.Join(k.Evidence, ", ")+")")
		where = append(where, k.Source)
	}
	msg := "kept by " + strings.Join(by, "; ")
	remedy := "make sure the source renders exactly the form below before the reconciler runs again (" + strings.Join(where, "; ") + ")"
	if !keepers[0].Reconciles && len(keepers) == 1 {
		msg += ": it creates the object only when it is missing, so it does not undo the rewrite"
		remedy = "change " + keepers[0].Source + " to the form below, so that an object it creates again is the CSI one"
	} else {
		msg += ": its source is said to have changed"
	}
	return &plugin.Finding{Code: FindingKeptByReconciler, Severity: plugin.SeverityWarning, Field: "metadata", Message: p.intern(msg), Remedy: p.intern(remedy)}, keepers
}

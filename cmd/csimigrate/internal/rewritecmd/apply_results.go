package rewritecmd

import (
	"io"
	"strings"
	"sync"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/output"
	"github.com/csimigrate/csimigrate/rewrite"
)

// rewrite -apply -o json: a result per object on stdout, the run's lines
// on stderr.

// ApplyReport is what rewrite -apply -o json prints.
type ApplyReport struct {
	// Results are the objects the run selected, PVs first, in order.
	Results []ObjectResult `json:"results"`
	// Refused counts the refused objects by code; Steps is the writes
	// taken (none in a dry run).
	RefusedBy map[string]int `json:"refusedBy,omitempty"`
	Steps     int            `json:"steps"`
	DryRun    bool           `json:"dryRun,omitempty"`
	// Error is what stopped the run, "" when nothing did.
	Error string `json:"error,omitempty"`
}

// ObjectResult is one object's outcome.
type ObjectResult struct {
	// Object is "pv/NAME" or "storageclass/NAME".
	Object string `json:"object"`
	// Result is "rewritten" (a dry run: "would be rewritten"; an undo:
	// "undone"), "refused", or "unchanged" (already done, or not reached
	// before the run stopped).
	Result string `json:"result"`
	// Codes and Reason say why an object was refused, as its line does.
	Codes  []string `json:"codes,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// objectResults collects the outcome of each object from the run's events.
type objectResults struct {
	mu      sync.Mutex
	order   []string
	wrote   map[string]bool
	refused map[string]ObjectResult
	// nothing names the objects the writer found nothing to do for.
	nothing map[string]bool
}

func newObjectResults() *objectResults {
	return &objectResults{wrote: map[string]bool{}, refused: map[string]ObjectResult{}, nothing: map[string]bool{}}
}

// selected notes the objects of the run, in order.
func (r *objectResults) selected(pvs, classes []apply.Target) {
	for _, t := range pvs {
		r.order = append(r.order, rewrite.PVRef(t.Name).Resource())
	}
	for _, t := range classes {
		r.order = append(r.order, rewrite.ClassRef(t.Name).Resource())
	}
}

func (r *objectResults) refuse(obj rewrite.ObjectRef, codes []string, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refused[obj.Resource()] = ObjectResult{Object: obj.Resource(), Result: "refused", Codes: codes, Reason: reason}
}

// write prints the report.
func (r *objectResults) write(w io.Writer, dir apply.Direction, dryRun bool, refusedBy map[rewrite.Code]int, steps int, runErr error) error {
	rep := ApplyReport{Results: []ObjectResult{}, Steps: steps, DryRun: dryRun}
	if len(refusedBy) > 0 {
		rep.RefusedBy = map[string]int{}
		for c, n := range refusedBy {
			rep.RefusedBy[string(c)] = n
		}
	}
	if runErr != nil {
		rep.Error = output.CommandError(runErr)
	}
	done := dir.Done()
	if dryRun {
		done = "would be " + done
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.order {
		switch res, ok := r.refused[o]; {
		case ok:
			rep.Results = append(rep.Results, res)
		case r.wrote[o] || dryRun && runErr == nil && !r.nothing[o]:
			// A dry run writes nothing: what it did not refuse, and had
			// something to do for, the real run would rewrite.
			rep.Results = append(rep.Results, ObjectResult{Object: o, Result: done})
		default:
			rep.Results = append(rep.Results, ObjectResult{Object: o, Result: "unchanged"})
		}
	}
	return output.WriteJSON(w, rep)
}

// resultEvents are the run's events as its lines (textEvents), noted per
// object as well.
type resultEvents struct {
	textEvents
	r *objectResults
}

func (e resultEvents) Writing(obj rewrite.ObjectRef, what string) {
	e.r.mu.Lock()
	e.r.wrote[obj.Resource()] = true
	e.r.mu.Unlock()
	e.textEvents.Writing(obj, what)
}

func (e resultEvents) Noted(obj rewrite.ObjectRef, what string) {
	if strings.HasSuffix(what, "nothing to do") {
		e.r.mu.Lock()
		e.r.nothing[obj.Resource()] = true
		e.r.mu.Unlock()
	}
	e.textEvents.Noted(obj, what)
}

func (e resultEvents) Refused(obj rewrite.ObjectRef, r *rewrite.Refusal) {
	e.r.refuse(obj, codeStrings(r), output.RefusalText(r))
	e.textEvents.Refused(obj, r)
}

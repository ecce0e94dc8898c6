package rewritecmd

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/rewrite"
)

// A review records what it was made with: the options that decide the
// run, the targets, and each object it covers with its uid and
// resourceVersion, as its last line. `rewrite -apply -review FILE` refuses
// before its first write when any of them differ from its own, and names
// the difference: what runs is what was reviewed.

// reviewMarker starts the record's line (a comment in either output).
const reviewMarker = "# csimigrate-review: "

// reviewRecord is a review's record.
type reviewRecord struct {
	// Args are the flags given that decide the run, "-name=value", sorted:
	// not the output's, the log's or the connection's, nor -apply's own.
	Args []string `json:"args"`
	// Targets are the objects named, as given.
	Targets []string `json:"targets"`
	// Objects are the objects the review covers: with steps, or refused.
	Objects []reviewedObject `json:"objects"`
}

// reviewedObject is an object a review covers.
type reviewedObject struct {
	// Ref is "pv/NAME" or "storageclass/NAME".
	Ref             string `json:"ref"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
	Refused         bool   `json:"refused,omitempty"`
}

// notRecorded are the flags a review's record leaves out: they change
// neither what is done nor to what.
var notRecorded = map[string]bool{"o": true, "v": true, "kubeconfig": true, "context": true, "live": true, "apply": true, "review": true}

// recordedArgs are the flags given on fs that decide the run, leaving out
// those only -apply takes (skip).
func recordedArgs(fs *flag.FlagSet, skip map[string]bool) []string {
	var out []string
	fs.Visit(func(f *flag.Flag) {
		if !notRecorded[f.Name] && !skip[f.Name] {
			out = append(out, "-"+f.Name+"="+f.Value.String())
		}
	})
	slices.Sort(out)
	return out
}

// add records an object the review covers.
func (r *reviewRecord) add(ref rewrite.ObjectRef, o metav1.Object, refused bool) {
	r.Objects = append(r.Objects, reviewedObject{Ref: ref.Resource(), UID: string(o.GetUID()), ResourceVersion: o.GetResourceVersion(), Refused: refused})
}

// line is the record as the review's last line.
func (r *reviewRecord) line() string {
	b, _ := json.Marshal(r)
	return reviewMarker + string(b) + "\n"
}

// readReview reads the record of a review file.
func readReview(path string) (*reviewRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-review: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	var rec *reviewRecord
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), reviewMarker); ok {
			rec = &reviewRecord{}
			if err := json.Unmarshal([]byte(rest), rec); err != nil {
				return nil, fmt.Errorf("-review %s: its record line cannot be read: %w", path, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("-review %s: %w", path, err)
	}
	if rec == nil {
		return nil, fmt.Errorf("-review %s: no record line (%q): give the output of csimigrate rewrite, with the options and targets of this run", path, strings.TrimSpace(reviewMarker))
	}
	return rec, nil
}

// differences names each way in which a run (its args and targets) and
// the objects it selected differ from the review's record.
func (r *reviewRecord) differences(args, targets []string, pvs, classes []apply.Target) []string {
	var out []string
	diff := func(what string, reviewed, run []string) {
		for _, a := range reviewed {
			if !slices.Contains(run, a) {
				out = append(out, fmt.Sprintf("%s %s: in the review, not in this run", what, a))
			}
		}
		for _, a := range run {
			if !slices.Contains(reviewed, a) {
				out = append(out, fmt.Sprintf("%s %s: in this run, not in the review", what, a))
			}
		}
	}
	diff("option", r.Args, args)
	diff("target", r.Targets, targets)
	var reviewed, run []string
	for _, o := range r.Objects {
		reviewed = append(reviewed, o.Ref)
	}
	for _, t := range pvs {
		run = append(run, rewrite.PVRef(t.Name).Resource())
	}
	for _, t := range classes {
		run = append(run, rewrite.ClassRef(t.Name).Resource())
	}
	diff("object", reviewed, run)
	return out
}

// changedSinceReview names each reviewed object whose live uid or
// resourceVersion is not the review's, unless this writer's run of it is
// under way (its saved state, or the PV's first step's annotation) or done:
// the writer then proves the rest from what it saved.
func (a *applier) changedSinceReview(ctx context.Context, r *reviewRecord) ([]string, error) {
	var out []string
	for _, o := range r.Objects {
		ref, err := cli.ParseObjectRef(o.Ref)
		if err != nil {
			return nil, fmt.Errorf("-review: object %q: %w", o.Ref, err)
		}
		var meta metav1.Object
		state := apply.StateName(ref.Name)
		if ref.Kind == rewrite.KindStorageClass {
			state = apply.ClassStateName(ref.Name)
			sc, gerr := a.client.StorageV1().StorageClasses().Get(ctx, ref.Name, metav1.GetOptions{})
			meta, err = sc, gerr
		} else {
			pv, gerr := a.client.CoreV1().PersistentVolumes().Get(ctx, ref.Name, metav1.GetOptions{})
			meta, err = pv, gerr
			if gerr == nil && pv.Annotations[rewrite.AnnReclaimPolicy] != "" {
				continue // under way: its first step is taken
			}
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading %s: %w", o.Ref, err)
		}
		if err == nil && string(meta.GetUID()) == o.UID && meta.GetResourceVersion() == o.ResourceVersion {
			continue
		}
		if _, serr := a.client.CoreV1().ConfigMaps(a.opts.StateNamespace).Get(ctx, state, metav1.GetOptions{}); serr == nil {
			continue // under way: the writer resumes it from its saved state
		}
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("%s: gone since the review", o.Ref))
		case a.alreadyDone(ctx, ref):
		case string(meta.GetUID()) != o.UID:
			out = append(out, fmt.Sprintf("%s: replaced since the review (uid %s, reviewed %s)", o.Ref, meta.GetUID(), o.UID))
		default:
			out = append(out, fmt.Sprintf("%s: changed since the review (resourceVersion %s, reviewed %s)", o.Ref, meta.GetResourceVersion(), o.ResourceVersion))
		}
	}
	return out, nil
}

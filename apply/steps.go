package apply

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/csimigrate/csimigrate/rewrite"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// A step is one step of replacing an object (a PV or a StorageClass) by its
// replacement, as docs/rewrite-apply.md numbers them. A run observes the cluster, takes
// the first step that is not done, and observes again until every step is
// done; so a run interrupted anywhere is finished by running it again, and a
// second run finds every step done and changes nothing.
type step[R any] struct {
	// name is the step as docs/rewrite-apply.md lists it.
	name string
	// done reports whether what the run observed shows the step taken (or
	// not needed): how a resumed run recognises its progress.
	done func(r R) bool
	// pre is the step's precondition, checked before it writes anything;
	// an error (a *rewrite.Refusal: the object is left as it was) ends the
	// run.
	pre func(r R, ctx context.Context) error
	// say is the step as Events.Writing announces it, before its write;
	// nil for a step that only waits for others (it writes nothing, is
	// not counted, and asks to be looked at again after wait).
	say func(r R) string
	// act takes the step (for a waiting step: checks how long it waited).
	act  func(r R, ctx context.Context) error
	wait time.Duration
}

// A subject is what one run of steps acts on: one object by name, and the
// state saved for it.
type subject interface {
	// observe reads what the run's own writes did not return and verifies
	// that the saved state still applies to what it read.
	observe(ctx context.Context) error
	// obj names the object.
	obj() rewrite.ObjectRef
	// current is a copy of the object as the run last saw it, nil when
	// there is none.
	current() runtime.Object
}

// Progress is what one Step did and when to look again.
type Progress struct {
	// Done: every step is done (or was found done); nothing is left.
	Done bool
	// Wrote is the write the step took, as Events.Writing announced it
	// ("" when it wrote nothing).
	Wrote string
	// RequeueAfter is when to look again when the step waits for others
	// (a finalizer's owner, a deletion); 0 means at once.
	RequeueAfter time.Duration
	// Object is, when Done, the object as the run last saw it (its
	// replacement, as the last write returned it or as read from the API
	// server after), nil when there is none: the caller's own copy, for
	// an Event about it without another read.
	Object runtime.Object
}

// A Run advances one object's replacement. It remembers what its own writes
// returned, so a Run stepped until done reads each object once per write;
// a fresh Run for the same object resumes from what the cluster shows.
type Run struct {
	obj  rewrite.ObjectRef
	step func(ctx context.Context) (Progress, error)
}

// Object names what the Run acts on: a PersistentVolume or a StorageClass.
func (r *Run) Object() rewrite.ObjectRef { return r.obj }

// Step observes the object and its saved state and takes the next step: at
// most one write. An error is final for this pass: a *rewrite.Refusal (the
// object is left exactly as it was; errors.As finds it), ErrWriteLimit, or
// what the API server answered (try again later: every write carries
// preconditions, and the next Step resumes from what the cluster shows).
func (r *Run) Step(ctx context.Context) (Progress, error) { return r.step(ctx) }

// PV is a Run of one PV's replacement.
func (a *Writer) PV(t Target) *Run {
	pr := newPVRun(a, t)
	return &Run{obj: pr.obj(), step: func(ctx context.Context) (Progress, error) { return stepOnce(ctx, a, pr, pvSteps) }}
}

// Class is a Run of one StorageClass's replacement.
func (a *Writer) Class(t Target) *Run {
	cr := a.newClassRun(t)
	return &Run{obj: cr.obj(), step: func(ctx context.Context) (Progress, error) { return stepOnce(ctx, a, cr, classSteps) }}
}

// stepOnce observes r and takes the first step that is not done.
func stepOnce[R subject](ctx context.Context, a *Writer, r R, steps []step[R]) (Progress, error) {
	if err := r.observe(ctx); err != nil {
		return Progress{}, err
	}
	i := slices.IndexFunc(steps, func(s step[R]) bool { return !s.done(r) })
	if i < 0 {
		return Progress{Done: true, Object: r.current()}, nil
	}
	s := steps[i]
	if s.pre != nil {
		if err := s.pre(r, ctx); errors.Is(err, errLookAgain) {
			return Progress{}, nil
		} else if err != nil {
			return Progress{}, err
		}
	}
	var p Progress
	if s.say != nil {
		p.Wrote = s.say(r)
		if err := a.takeWrite(r.obj(), p.Wrote); err != nil {
			return Progress{}, err
		}
	} else {
		p.RequeueAfter = s.wait
	}
	if err := s.act(r, ctx); err != nil {
		return Progress{}, err
	}
	return p, nil
}

// errLookAgain, from a step's pre, means that what the run observed was
// out of date: no write is taken, and the next Step observes again.
var errLookAgain = errors.New("look again")

// maxRounds bounds the steps of one runToEnd; every step writes or waits a
// moment, so it is reached only if the cluster keeps changing.
const maxRounds = 1000

// runToEnd steps r until it is done, waiting where a step asks to.
func runToEnd(ctx context.Context, r *Run) error {
	for range maxRounds {
		p, err := r.Step(ctx)
		if err != nil || p.Done {
			return err
		}
		if p.RequeueAfter > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(p.RequeueAfter):
			}
		}
	}
	return &ObjectError{Object: r.obj, Err: errors.New("did not converge")}
}

// getOrNil is a Get's result with NotFound as nil.
func getOrNil[T any](obj *T, err error) (*T, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// ObjectError is what went wrong with one object: the object, and the
// error of its run or check (a *rewrite.Refusal, an *InProgressError, the
// API server's answer), which errors.Is and errors.As find through it.
type ObjectError struct {
	Object rewrite.ObjectRef
	Err    error
}

// Error is "pv/NAME: " (or "storageclass/NAME: ") and the error.
func (e *ObjectError) Error() string { return e.Object.Resource() + ": " + e.Err.Error() }

// Unwrap is the object's error.
func (e *ObjectError) Unwrap() error { return e.Err }

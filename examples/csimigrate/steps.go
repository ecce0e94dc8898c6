package main

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// A step is one step of replacing an object (a PV or a StorageClass) by its
// replacement, as the README numbers them. A run observes the cluster, takes
// the first step that is not done, and observes again until every step is
// done; so a run interrupted anywhere is finished by running it again, and a
// second run finds every step done and changes nothing.
type step[R any] struct {
	// name is the step as the README lists it.
	name string
	// done reports whether what the run observed shows the step taken (or
	// not needed): how a resumed run recognises its progress.
	done func(r R) bool
	// pre is the step's precondition, checked before it writes anything;
	// an error (a *refusal: the object is left as it was) ends the run.
	pre func(r R, ctx context.Context) error
	// say is the line printed before the step's write; nil for a step that
	// only waits for others (it writes nothing and is not counted).
	say func(r R) string
	// act takes the step.
	act func(r R, ctx context.Context) error
}

// A subject is what one run of steps acts on: one object by name, and the
// state saved for it.
type subject interface {
	// observe reads what the run's own writes did not return and verifies
	// that the saved state still applies to what it read.
	observe(ctx context.Context) error
	// obj names the object as printed: "pv/NAME", "storageclass/NAME".
	obj() string
}

// maxRounds bounds the observations of one run; every round takes a step or
// waits a moment, so it is reached only if the cluster keeps changing.
const maxRounds = 1000

// runSteps takes the steps in order until every one is done.
func runSteps[R subject](ctx context.Context, a *applier, r R, steps []step[R]) error {
	for range maxRounds {
		if err := r.observe(ctx); err != nil {
			return err
		}
		i := slices.IndexFunc(steps, func(s step[R]) bool { return !s.done(r) })
		if i < 0 {
			return nil
		}
		s := steps[i]
		if s.pre != nil {
			if err := s.pre(r, ctx); err != nil {
				return err
			}
		}
		if s.say != nil {
			if err := a.step(r.obj(), s.say(r)); err != nil {
				return err
			}
		}
		if err := s.act(r, ctx); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s: did not converge", r.obj())
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

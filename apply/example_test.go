package apply_test

import (
	"context"
	"errors"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// A controller's reconcile of one PV with the engine: each call takes at
// most one write and says when to come back; a refusal leaves the PV as it
// was. The Writer writes only while the writer Lease holds, which keeps
// other writers (rewrite -apply, a second controller) out.
func ExampleWriter_PV() {
	// Once, at start (a leader election on apply.LeaseName, given as an
	// apply.HolderFunc of its IsLeader, does as well).
	start := func(ctx context.Context, client kubernetes.Interface) (context.Context, *apply.Lease, error) {
		return apply.HoldLease(ctx, client, apply.DefaultStateNamespace, time.Minute)
	}
	reconcile := func(ctx context.Context, client kubernetes.Interface, lease apply.Holder, pv string) (requeue time.Duration, err error) {
		tr, err := translate.New()
		if err != nil {
			return 0, err
		}
		w, err := apply.New(client, tr, klog.FromContext(ctx), apply.NoEvents{}, apply.Options{Lease: lease})
		if err != nil {
			return 0, err
		}
		p, err := w.PV(apply.Target{Name: pv}).Step(ctx)
		var refused *rewrite.Refusal
		switch {
		case errors.As(err, &refused):
			return 0, nil // left as it was; refused.Code and Remedy say why and what to do
		case err != nil:
			return time.Second, err
		case p.Done:
			return 0, nil
		}
		return p.RequeueAfter, nil // 0: at once, the next step
	}
	_, _ = start, reconcile
}

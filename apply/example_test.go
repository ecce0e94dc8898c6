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
// was. The writer Lease keeps other writers (rewrite -apply, a second
// controller) out while it runs.
func ExampleWriter_PV() {
	reconcile := func(ctx context.Context, client kubernetes.Interface, pv string) (requeue time.Duration, err error) {
		tr, err := translate.New()
		if err != nil {
			return 0, err
		}
		w, err := apply.New(client, tr, klog.FromContext(ctx), apply.NoEvents{}, apply.Options{})
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
	_ = reconcile
}

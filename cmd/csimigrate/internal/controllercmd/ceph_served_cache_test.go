package controllercmd

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
)

// The controller's served-entries reader: the first question waits for
// the first read; later ones get the last answer at once, and a read older
// than -recheck is made again behind them (a worker does not wait for a
// read of the whole cluster); a failed read keeps the last answer.
func TestCephServedReadsBehindTheWorkers(t *testing.T) {
	client := fake.NewClientset()
	var mu sync.Mutex
	reads, release, fail := 0, make(chan struct{}), false
	client.PrependReactor("create", "selfsubjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		reads++
		first, failing := reads == 1, fail
		mu.Unlock()
		if first {
			<-release // the first read is slow
		}
		if failing {
			return true, nil, errors.New("API server unreachable")
		}
		// Not allowed: the answer is the refusal naming what it may not list.
		return true, &authorizationv1.SelfSubjectAccessReview{}, nil
	})
	o := &options{}
	o.ctl.Recheck = time.Hour
	get := o.cephServed(client, nil, cli.Klog0(), nil)
	ctx := context.Background()
	got := make(chan error, 1)
	go func() { _, err := get(ctx, plugin.RBDDriverName); got <- err }()
	select {
	case err := <-got:
		t.Fatalf("the first question did not wait for the first read: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	var refusal *rewrite.Refusal
	if err := <-got; !errors.As(err, &refusal) || refusal.Code != rewrite.CodeCephEntryUnchecked {
		t.Fatalf("first answer: %v, want the refusal %s", err, rewrite.CodeCephEntryUnchecked)
	}
	mu.Lock()
	after := reads
	mu.Unlock()
	if _, err := get(ctx, plugin.RBDDriverName); !errors.As(err, &refusal) {
		t.Fatalf("within -recheck: %v, want the last answer", err)
	}
	mu.Lock()
	if reads != after {
		t.Errorf("within -recheck: %d more reads, want none", reads-after)
	}
	fail = true
	mu.Unlock()
	// Stale: answered at once with the last answer, read again behind.
	o.ctl.Recheck = 0
	if _, err := get(ctx, plugin.RBDDriverName); !errors.As(err, &refusal) {
		t.Fatalf("stale: %v, want the last answer", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := reads
		mu.Unlock()
		if n > after {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a stale answer was not read again")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the failed read ends
	if _, err := get(ctx, plugin.RBDDriverName); !errors.As(err, &refusal) {
		t.Fatalf("after a failed read: %v, want the last answer kept", err)
	}
}

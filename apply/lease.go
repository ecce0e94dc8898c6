package apply

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/rewrite"
)

// LeaseName is the Lease every csimigrate writer holds while it writes
// (rewrite -apply, and the controller, whose leader election takes the same
// Lease), in the state namespace: one writer at a time.
const LeaseName = rewrite.WriterLease

// writerLeaseDuration is how long a holder's Lease lasts without renewal;
// it renews every third of it.
var writerLeaseDuration = 15 * time.Second

// Lease is this process's hold on the writer Lease. It is a Holder: a
// Writer given it (Options.Lease) writes while it holds.
type Lease struct {
	client kubernetes.Interface
	ns, id string
	mu     sync.Mutex
	lease  *coordinationv1.Lease // as last written by us
	// renewed is when the Lease was last written by us (taken or
	// renewed), by this process's clock; released: given up or lost.
	renewed  time.Time
	released bool
	stop     func()
	done     chan struct{}
}

// HoldLease takes the writer Lease, waiting up to wait while another
// writer holds it. A Lease whose holder stopped renewing is taken once this
// process has seen it unchanged for the holder's lease duration (its own
// clock against its own observations, never the holder's timestamps). The
// returned context is cancelled if the Lease is lost, so that no write
// follows; Release gives the Lease up.
func HoldLease(ctx context.Context, client kubernetes.Interface, ns string, wait time.Duration) (context.Context, *Lease, error) {
	return HoldLeaseSaying(ctx, client, ns, wait, nil)
}

// HoldLeaseSaying is HoldLease that, when it has to wait, says so at once
// through say (nil: silent): who holds the Lease, and how long until it is
// taken over should the holder have stopped renewing (an interrupted run).
func HoldLeaseSaying(ctx context.Context, client kubernetes.Interface, ns string, wait time.Duration, say func(string)) (context.Context, *Lease, error) {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	l := &Lease{client: client, ns: ns, id: fmt.Sprintf("csimigrate-%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b)), done: make(chan struct{})}
	if err := l.take(ctx, time.Now().Add(wait), say); err != nil {
		return nil, nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	renewCtx, stop := context.WithCancel(context.Background())
	l.stop = func() { stop(); cancel() }
	go l.keep(renewCtx, cancel)
	return runCtx, l, nil
}

// take writes the Lease as ours: created when there is none, taken over
// when it has no holder or its holder stopped renewing, else waited for
// until deadline.
func (l *Lease) take(ctx context.Context, deadline time.Time, say func(string)) error {
	leases := l.client.CoordinationV1().Leases(l.ns)
	said := false
	var seenRV string
	var seenAt time.Time
	for {
		cur, err := getOrNil(leases.Get(ctx, LeaseName, metav1.GetOptions{}))
		if err != nil {
			return fmt.Errorf("reading Lease %s/%s: %w", l.ns, LeaseName, err)
		}
		now := metav1.NewMicroTime(time.Now())
		secs := int32((writerLeaseDuration + time.Second - 1) / time.Second) // at least 1: the API server refuses 0
		mine := coordinationv1.LeaseSpec{HolderIdentity: &l.id, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now}
		var got *coordinationv1.Lease
		switch {
		case cur == nil:
			got, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName, Namespace: l.ns,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "csimigrate"}}, Spec: mine}, metav1.CreateOptions{})
		default:
			if h := cur.Spec.HolderIdentity; h != nil && *h != "" && *h != l.id {
				dur := writerLeaseDuration
				if d := cur.Spec.LeaseDurationSeconds; d != nil && *d > 0 {
					dur = time.Duration(*d) * time.Second
				}
				if cur.ResourceVersion != seenRV {
					seenRV, seenAt = cur.ResourceVersion, time.Now()
				}
				if time.Since(seenAt) <= dur {
					if say != nil && !said {
						said = true
						say(fmt.Sprintf("waiting for the writer Lease %s/%s, held by %s: taken over in %s if its holder has stopped renewing it (an interrupted run), else waited for until %s",
							l.ns, LeaseName, *h, (dur - time.Since(seenAt)).Round(time.Second), deadline.Format(time.TimeOnly)))
					}
					if time.Now().After(deadline) {
						return fmt.Errorf("another writer holds Lease %s/%s (holder %s): only one csimigrate writes at a time; nothing was written: run again when it is done (a holder that stops renewing is taken over after %s without a change)",
							l.ns, LeaseName, *h, dur)
					}
					select {
					case <-ctx.Done():
						return ctx.Err()
					case <-time.After(500 * time.Millisecond):
					}
					continue
				}
			}
			next := cur.DeepCopy()
			next.Spec = mine
			got, err = leases.Update(ctx, next, metav1.UpdateOptions{}) // the resourceVersion read: a race is a conflict
		}
		switch {
		case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
			continue
		case err != nil:
			return fmt.Errorf("taking Lease %s/%s: %w", l.ns, LeaseName, err)
		}
		l.mu.Lock()
		l.lease, l.renewed = got, time.Now()
		l.mu.Unlock()
		return nil
	}
}

// keep renews the Lease every third of its duration until ctx ends; when
// a renewal fails, the Lease is lost: lost is called, so that no write
// follows.
func (l *Lease) keep(ctx context.Context, lost func()) {
	defer close(l.done)
	t := time.NewTicker(writerLeaseDuration / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := l.renew(ctx); err != nil && ctx.Err() == nil {
				l.mu.Lock()
				l.released = true
				l.mu.Unlock()
				lost()
				return
			}
		}
	}
}

// renew writes a new renewTime on the Lease as last written by us: a
// conflict means another writer took it.
func (l *Lease) renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	next := l.lease.DeepCopy()
	now := metav1.NewMicroTime(time.Now())
	next.Spec.RenewTime = &now
	got, err := l.client.CoordinationV1().Leases(l.ns).Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	l.lease, l.renewed = got, time.Now()
	return nil
}

// Holding reports whether this process holds the Lease: taken, not
// released, and written by it within the last two thirds of the lease
// duration (a renewal stuck for longer is not trusted: another writer may
// take the Lease once the duration has passed).
func (l *Lease) Holding() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lease != nil && !l.released && time.Since(l.renewed) < writerLeaseDuration*2/3
}

// Holder is the identity this process holds the Lease as.
func (l *Lease) Holder() string { return l.id }

// Release stops renewing and gives the Lease up (no holder), if it is
// still ours.
func (l *Lease) Release(ctx context.Context) {
	l.stop()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	l.released = true
	next := l.lease.DeepCopy()
	empty := ""
	next.Spec.HolderIdentity = &empty
	_, _ = l.client.CoordinationV1().Leases(l.ns).Update(ctx, next, metav1.UpdateOptions{})
}

// LeaseHolder names who holds the writer Lease in namespace ns now ("" for
// nobody, or no Lease yet), for a dry run to say what the real run would
// wait for; the holder may stop renewing, which only HoldLease's wait tells.
func LeaseHolder(ctx context.Context, client kubernetes.Interface, ns string) (string, error) {
	l, err := client.CoordinationV1().Leases(ns).Get(ctx, LeaseName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", err
	case l.Spec.HolderIdentity == nil:
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}

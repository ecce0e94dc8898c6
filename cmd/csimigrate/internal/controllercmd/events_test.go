package controllercmd

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
)

// slowSink is an Event sink that takes a while for each Event, as an API
// server under a migration's load does.
type slowSink struct {
	mu      sync.Mutex
	created []string
}

func (s *slowSink) Create(e *v1.Event) (*v1.Event, error) {
	time.Sleep(20 * time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.created = append(s.created, e.InvolvedObject.Name)
	return e, nil
}
func (s *slowSink) Update(e *v1.Event) (*v1.Event, error)          { return e, nil }
func (s *slowSink) Patch(e *v1.Event, _ []byte) (*v1.Event, error) { return e, nil }

// A stopping controller's queued Events are sent before its broadcaster
// shuts down, though the signal's context has ended.
func TestEventFlushSendsQueuedEvents(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var flush eventFlush
	sink := &slowSink{}
	b := record.NewBroadcaster(record.WithContext(context.WithoutCancel(ctx)))
	b.StartRecordingToSink(flush.sink(sink))
	rec := flush.recorder(b.NewRecorder(scheme.Scheme, v1.EventSource{Component: "test"}))
	for i := range 20 {
		pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pv-%d", i), UID: "u"}}
		rec.Event(pv, v1.EventTypeNormal, "Migrated", "replaced by its CSI form")
	}
	cancel() // the signal
	flush.wait(eventFlushTime)
	b.Shutdown()
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.created) != 20 {
		t.Errorf("%d of 20 Events sent before the shutdown", len(sink.created))
	}
}

// The wait ends when the sink has sent nothing for a second (Events the
// correlator drops are never sent), not at its limit.
func TestEventFlushGivesUpWhenIdle(t *testing.T) {
	var flush eventFlush
	flush.recorded.Add(3)
	start := time.Now()
	flush.wait(time.Minute)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("waited %s for Events never sent", took)
	}
}

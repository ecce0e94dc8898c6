package controllercmd

import (
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// eventFlush counts the Events the controller records and those its sink
// has sent (or given up on), so that a stopping controller gives the ones
// still queued a moment to be sent. client-go's broadcaster drops what is
// queued when it shuts down: a controller stopped right after a migration
// lost most of its Migrated Events (the scale benchmark, which stops it at
// once, counted 52 to 119 of 1,000).
type eventFlush struct {
	recorded, sent atomic.Int64
}

// eventFlushTime is the most a stopping controller waits for its Events.
const eventFlushTime = 3 * time.Second

// recorder counts what rec records.
func (f *eventFlush) recorder(rec record.EventRecorder) record.EventRecorder {
	return countingRecorder{rec, &f.recorded}
}

// sink counts what sink has sent.
func (f *eventFlush) sink(sink record.EventSink) record.EventSink {
	return countingSink{sink, &f.sent}
}

// wait returns once every recorded Event was sent, the sink has sent
// nothing for a second (the correlator drops or merges some, which are
// never sent), or max has passed.
func (f *eventFlush) wait(max time.Duration) {
	deadline := time.Now().Add(max)
	last, since := f.sent.Load(), time.Now()
	for f.sent.Load() < f.recorded.Load() && time.Now().Before(deadline) && time.Since(since) < time.Second {
		time.Sleep(20 * time.Millisecond)
		if n := f.sent.Load(); n != last {
			last, since = n, time.Now()
		}
	}
}

type countingRecorder struct {
	record.EventRecorder
	n *atomic.Int64
}

func (r countingRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.n.Add(1)
	r.EventRecorder.Event(object, eventtype, reason, message)
}

func (r countingRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.n.Add(1)
	r.EventRecorder.Eventf(object, eventtype, reason, messageFmt, args...)
}

func (r countingRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.n.Add(1)
	r.EventRecorder.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
}

type countingSink struct {
	record.EventSink
	n *atomic.Int64
}

func (s countingSink) Create(e *v1.Event) (*v1.Event, error) {
	defer s.n.Add(1)
	return s.EventSink.Create(e)
}

func (s countingSink) Update(e *v1.Event) (*v1.Event, error) {
	defer s.n.Add(1)
	return s.EventSink.Update(e)
}

func (s countingSink) Patch(e *v1.Event, data []byte) (*v1.Event, error) {
	defer s.n.Add(1)
	return s.EventSink.Patch(e, data)
}

package controller

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the controller's Prometheus metrics. Gauges are brought up to
// date with the status; counters count what this process did.
type Metrics struct {
	inTreePVs     *prometheus.GaugeVec
	inTreeClasses *prometheus.GaugeVec
	blocked       *prometheus.GaugeVec
	queueDepth    *prometheus.GaugeVec
	writes        *prometheus.CounterVec
	migrated      *prometheus.CounterVec
	refusals      *prometheus.CounterVec
	failures      *prometheus.CounterVec
}

// NewMetrics registers the controller's metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		inTreePVs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "csimigrate_intree_persistentvolumes",
			Help: "In-tree PVs in the controller's scope not yet rewritten, by in-tree plugin."}, []string{"plugin"}),
		inTreeClasses: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "csimigrate_intree_storageclasses",
			Help: "In-tree StorageClasses in the controller's scope not yet replaced, by provisioner."}, []string{"provisioner"}),
		blocked: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "csimigrate_blocked",
			Help: "Objects left as they are, by kind and reason (a refusal code, WaitingForDriver, MigrationFailed)."}, []string{"kind", "reason"}),
		queueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "csimigrate_queue_depth",
			Help: "Objects waiting in the controller's work queues."}, []string{"queue"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "csimigrate_writes_total",
			Help: "Writes (steps) taken, by kind of object."}, []string{"kind"}),
		migrated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "csimigrate_rewrites_total",
			Help: "Objects this process replaced by their CSI form, by kind."}, []string{"kind"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "csimigrate_refusals_total",
			Help: "Refusals reported (once per object and reason), by kind and code."}, []string{"kind", "code"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "csimigrate_failures_total",
			Help: "Steps that failed with an API error and were backed off, by kind."}, []string{"kind"}),
	}
	for _, c := range []prometheus.Collector{m.inTreePVs, m.inTreeClasses, m.blocked, m.queueDepth, m.writes, m.migrated, m.refusals, m.failures} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

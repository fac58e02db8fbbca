package caddymodule

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/webhook"
	"github.com/harness-edge/harness-edge/proxy"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// metrics are the runtime's Prometheus collectors. There is one set per process: the runtime
// outlives configs (its Observer is fixed at Open), while Caddy gives every config a fresh
// registry, so the same collectors are registered into each new registry and keep counting
// across reloads. Caddy's reverse_proxy does the same for its upstream gauge.
type metrics struct {
	executionsStarted  *prometheus.CounterVec
	executionsFinished *prometheus.CounterVec
	eventsAppended     prometheus.Counter
	streamsOpen        prometheus.Gauge
	storeCommit        prometheus.Histogram
	webhookDeliveries  *prometheus.CounterVec // by outcome: delivered, retried, failed
	webhookQueueAge    prometheus.GaugeFunc
	storeUndecodable   *prometheus.CounterVec // by kind: execution, event
	webhookOldest      atomic.Int64           // Unix nanoseconds of the oldest undelivered notification; 0: none
}

// processMetrics returns the process's collectors, creating them on first use.
var processMetrics = sync.OnceValue(func() *metrics {
	const namespace = "harness"
	m := &metrics{
		webhookDeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "webhook_attempts_total",
			Help:      "Webhook delivery attempts by outcome: delivered, retried (will be sent again), failed (given up).",
		}, []string{"outcome"}),
		executionsStarted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "executions_started_total",
			Help:      "Executions accepted by the runtime, by provider.",
		}, []string{"provider"}),
		executionsFinished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "executions_finished_total",
			Help:      "Executions that reached a terminal state, by provider and state.",
		}, []string{"provider", "state"}),
		eventsAppended: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "events_appended_total",
			Help:      "Events appended to execution logs.",
		}),
		streamsOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace,
			Name:      "sse_streams_open",
			Help:      "Server-sent event streams currently open.",
		}),
		storeUndecodable: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "store_undecodable_reads_total",
			Help:      "Reads that met a stored record the runtime cannot decode (damaged), by kind: execution (skipped by listings, answered INTERNAL_ERROR) or event (answered INTERNAL_ERROR). Each read counts; the log names each record once.",
		}, []string{"kind"}),
		storeCommit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace,
			Name:      "store_commit_duration_seconds",
			Help:      "Latency of store commits (write transactions, fsync included).",
			// 100µs … ~3s: an fsync on a fast disk up to a badly stalled one.
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 12),
		}),
	}
	for _, kind := range []backend.DamagedRecord{backend.DamagedExecution, backend.DamagedEvent, backend.DamagedConversation} {
		m.storeUndecodable.WithLabelValues(string(kind)) // exported at 0 from the start, for alerts on increase()
	}
	m.webhookQueueAge = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "webhook_queue_age_seconds",
		Help:      "Age of the oldest webhook notification not yet delivered (0 when none waits).",
	}, func() float64 {
		oldest := m.webhookOldest.Load()
		if oldest == 0 {
			return 0
		}
		return time.Since(time.Unix(0, oldest)).Seconds()
	})
	return m
})

func (m *metrics) collectors() []prometheus.Collector {
	return append([]prometheus.Collector{m.executionsStarted, m.executionsFinished, m.eventsAppended, m.streamsOpen, m.storeCommit, m.webhookDeliveries, m.webhookQueueAge, m.storeUndecodable},
		usageMetrics().tokens, usageMetrics().cost)
}

// register adds the collectors to a config's registry. Several handlers of one config share the
// registry, so finding our own collector already there is expected.
func (m *metrics) register(registry prometheus.Registerer) error {
	for _, c := range m.collectors() {
		err := registry.Register(c)
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) && already.ExistingCollector == c {
			continue
		}
		if err != nil {
			return fmt.Errorf("registering harness metrics: %w", err)
		}
	}
	return nil
}

// ExecutionStarted implements backend.Observer.
func (m *metrics) ExecutionStarted(providerID string) {
	m.executionsStarted.WithLabelValues(providerID).Inc()
}

// ExecutionFinished implements backend.Observer.
func (m *metrics) ExecutionFinished(providerID string, state api.ExecutionState) {
	m.executionsFinished.WithLabelValues(providerID, string(state)).Inc()
}

// EventsAppended implements backend.Observer.
func (m *metrics) EventsAppended(n int) { m.eventsAppended.Add(float64(n)) }

// StoreCommit implements backend.Observer.
func (m *metrics) StoreCommit(d time.Duration) { m.storeCommit.Observe(d.Seconds()) }

// StoredRecordUndecodable implements backend.DamageObserver.
func (m *metrics) StoredRecordUndecodable(kind backend.DamagedRecord) {
	m.storeUndecodable.WithLabelValues(string(kind)).Inc()
}

// WebhookDelivered implements webhook.Observer.
func (m *metrics) WebhookDelivered() { m.webhookDeliveries.WithLabelValues("delivered").Inc() }

// WebhookRetried implements webhook.Observer.
func (m *metrics) WebhookRetried() { m.webhookDeliveries.WithLabelValues("retried").Inc() }

// WebhookFailed implements webhook.Observer.
func (m *metrics) WebhookFailed() { m.webhookDeliveries.WithLabelValues("failed").Inc() }

// WebhookQueueOldest implements webhook.Observer. With several data directories in one
// process, the gauge follows the runtime that scanned its outbox last.
func (m *metrics) WebhookQueueOldest(t time.Time) {
	if t.IsZero() {
		m.webhookOldest.Store(0)
		return
	}
	m.webhookOldest.Store(t.UnixNano())
}

// StreamOpened implements proxy.StreamObserver.
func (m *metrics) StreamOpened() { m.streamsOpen.Inc() }

// StreamClosed implements proxy.StreamObserver.
func (m *metrics) StreamClosed() { m.streamsOpen.Dec() }

var (
	_ backend.Observer       = (*metrics)(nil)
	_ webhook.Observer       = (*metrics)(nil)
	_ backend.DamageObserver = (*metrics)(nil)
	_ proxy.StreamObserver   = (*metrics)(nil)
)

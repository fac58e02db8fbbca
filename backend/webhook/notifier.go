package webhook

import (
	"log/slog"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Config is what a Notifier is built from: trusted configuration (the Caddyfile, a test).
type Config struct {
	Subscriptions []Subscription
	Delivery      Delivery     // retries, timeout, workers
	Logger        *slog.Logger // nil = discard
	Observer      Observer     // nil = none (metrics hooks)
	// TracerProvider makes the delivery spans (tracing.go). Nil: no-op.
	TracerProvider trace.TracerProvider
}

// Notifier is the webhooks of one runtime: the planner the store calls inside every commit and
// the sender that delivers the rows it made. It implements backend.Webhooks: the runtime sets
// it as its store's outbox planner before recovery (so the run.failed that recovery commits is
// notified like any other event), starts it once recovery is done and stops it before the
// store closes. A Notifier serves one runtime once.
type Notifier struct {
	*planner
	sender *sender
}

// New validates the subscriptions and builds their notifier. A program with no subscriptions
// builds none: without a notifier no sender runs, and rows a previous configuration left in
// the outbox stay there untouched.
func New(cfg Config) (*Notifier, error) {
	targets, err := newTargets(cfg.Subscriptions)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tp := cfg.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	s := newSender(targets, cfg.Delivery.withDefaults(), log, cfg.Observer, tp)
	return &Notifier{planner: newPlanner(targets, s.poke), sender: s}, nil
}

// Start begins delivering st's outbox, what a previous process left there first.
func (n *Notifier) Start(st store.Store) { n.sender.start(st) }

// Stop ends delivery and waits for the requests in flight: outcomes in hand are committed, the
// others are sent again after a restart. The store must still be open.
func (n *Notifier) Stop() { n.sender.stop() }

package backend

import (
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Options configure Open.
type Options struct {
	// Store is where executions are kept (package store's contract), injected by the caller as
	// Mercure injects its transport; required. The runtime imports no store driver: the
	// program that assembles it chooses one (the Caddy module from its config; package
	// backend/local opens the single-node default, a bbolt file in a directory). The runtime
	// owns it: Close closes it, and so does an Open that fails.
	Store store.Store
	// Node names this runtime among the nodes sharing a store (store.Cluster): the Owner of
	// the executions it starts. On a shared store it is the store's Node() (a different value
	// here is an error); on a single-node store it is only a name (default os.Hostname()).
	Node string
	// Cluster serves the other nodes when Store is shared by several (a store.Cluster, such as
	// PostgreSQL): required then, and nil otherwise. Package backend/cluster makes it
	// (cluster.New), with the lease length and the notice poll (docs/scale-out.md).
	Cluster Cluster
	// StoreTimeout bounds how long a start waits for a shared store to take its execution
	// (a stalled database): past it, the start answers UNAVAILABLE and the execution never
	// exists. The store's own reads are bounded by its configuration (postgres: Timeout).
	// Default DefaultStoreTimeout. Ignored by single-node stores.
	StoreTimeout  time.Duration
	Providers     []Provider    // registration order = order in Describe()
	Name, Version string        // RuntimeDescription identity; defaults "harness-edge", "0.2.0"
	CancelTimeout time.Duration // bound on waiting for provider cleanup; default 30s
	Retention     time.Duration // 0 = keep forever; else terminal executions older than this are deleted with their events
	// StreamLogRetention is how long the stream log behind the conversation and tenant streams
	// keeps an entry (docs/protocol.md, "Conversation and tenant streams"): a cursor older than
	// that is answered as expired. 0: as long as Retention keeps executions (forever when that
	// is 0); never longer than Retention.
	StreamLogRetention time.Duration
	MaxEventDataBytes  int // default 1 MiB; larger provider emissions are rejected
	// Per-execution bounds on what one execution adds to the store: its number of events and
	// the bytes of their JSON. A provider emission that would exceed one fails the execution
	// (one run.failed, PROVIDER_ERROR naming the limit) and cancels the provider's context.
	// Defaults 100,000 events and 32 MiB.
	MaxEventsPerExecution     int
	MaxEventBytesPerExecution int64
	// Webhooks tell receivers about executions (docs/webhooks.md): a notifier that package
	// backend/webhook builds from the subscriptions. Nil: none.
	Webhooks Webhooks
	Logger   *slog.Logger // nil = discard
	Observer Observer     // nil = none (metrics hooks)
	// TracerProvider makes the execution spans (tracing.go). Nil: no-op, nothing is recorded.
	TracerProvider trace.TracerProvider
	// Budgets keeps tenants within their usage budgets (docs/usage.md): package backend/budget.
	// Nil: none.
	Budgets Budgets

	// Approvals configure what answers actions besides people (docs/protocol.md, "Approvals"):
	// the providers' default expiry and the configured standing rules.
	Approvals ApprovalOptions
}

// Defaults applied by Open.
const (
	DefaultName          = "harness-edge"
	DefaultVersion       = "0.2.0"
	DefaultCancelTimeout = 30 * time.Second
	// DefaultStoreTimeout is Options.StoreTimeout's default.
	DefaultStoreTimeout      = 5 * time.Second
	DefaultMaxEventDataBytes = 1 << 20
	// With both defaults one execution adds at most about 32 MiB of events (plus keys and
	// page overhead) to the store, whatever its input.
	DefaultMaxEventsPerExecution     = 100_000
	DefaultMaxEventBytesPerExecution = 32 << 20
)

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Version == "" {
		o.Version = DefaultVersion
	}
	if o.CancelTimeout <= 0 {
		o.CancelTimeout = DefaultCancelTimeout
	}
	if o.MaxEventDataBytes <= 0 {
		o.MaxEventDataBytes = DefaultMaxEventDataBytes
	}
	if o.MaxEventsPerExecution <= 0 {
		o.MaxEventsPerExecution = DefaultMaxEventsPerExecution
	}
	if o.MaxEventBytesPerExecution <= 0 {
		o.MaxEventBytesPerExecution = DefaultMaxEventBytesPerExecution
	}
	if o.Node == "" {
		if host, err := os.Hostname(); err == nil && host != "" {
			o.Node = host
		} else {
			o.Node = "harness-edge"
		}
	}
	if o.StoreTimeout <= 0 {
		o.StoreTimeout = DefaultStoreTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.TracerProvider == nil {
		o.TracerProvider = noop.NewTracerProvider()
	}
	if o.Observer == nil {
		o.Observer = noopObserver{}
	}
	return o
}

package backend

import (
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Several nodes, one store (docs/scale-out.md). What the runtime needs from the other nodes is
// the interface below, and package backend/cluster implements it over a store.Cluster: leases
// and fencing, takeovers, commands to an execution's owner, following another node's events.
// The runtime itself only stamps the executions it starts with its node's name and the lease
// epoch it runs them under, and reads on the owner wait for commits in flight (settled.go). On a
// single-node store (bbolt) Options.Cluster is nil and none of it runs.

// Cluster is the runtime's side of a store shared by several nodes (Options.Cluster).
type Cluster interface {
	// Join takes this node's lease. Open calls it before recovery: from then on no other node
	// can take this node for dead and claim what recovery fails or resumes here.
	Join(host ClusterHost) error
	// Start begins serving the other nodes (notices, renewals, takeovers, commands). Open calls
	// it once recovery and resumption are done, before anything is served.
	Start()
	// Stop ends every loop and tail of the cluster (Close). The lease is kept: this node's
	// unfinished executions go to its next Open or, if it does not come back within the lease,
	// to the node that claims it.
	Stop()
	// Epoch is the lease epoch new executions run under, the fencing token of their batches
	// (store.Batch.Lease); 0 while this node holds none (fenced, not yet renewed).
	Epoch() int64
	// Sure reports whether this node can vouch for its lease (renewed less than a lease ago):
	// otherwise it refuses new work and serves reads from the store.
	Sure() bool
	// Admits reports whether this node takes new executions: sure of its lease with a margin
	// (its last renewal is younger than two thirds of a lease). A node whose renewals fall
	// behind — an overloaded database or machine — sheds new starts (UNAVAILABLE, with
	// Retry-After) before its lease can lapse and another node take it for dead.
	Admits() bool
	// Lapsed is closed once this node can no longer vouch for its lease (Sure turns false),
	// and a fresh channel is handed out once it can again. A subscription takes it when it
	// starts and ends when it closes: its node may be claimed, and its clients resume on
	// another node (backend/cluster/vouch.go says why the lease is the bound).
	Lapsed() <-chan struct{}
	// RenewalFailing reports whether the last renewal failed (the store did not answer).
	RenewalFailing() bool
	// Remote is the handle of rec, an unfinished execution this node does not run.
	Remote(rec store.Execution) Handle
	// Fenced tells the cluster a commit was fenced: the lease is checked at once.
	Fenced()
}

// ClusterHost is what the cluster may ask of the runtime it serves.
type ClusterHost interface {
	// Store is the runtime's store; Logger its logger; Tracer makes its spans (a no-op one
	// when tracing is off).
	Store() store.Store
	Logger() *slog.Logger
	Tracer() trace.Tracer
	// Locate is the handle of execution id, whatever its tenant (a command was checked where
	// it was posted).
	Locate(id string) (Handle, error)
	// CheckResponse runs RespondToAction's checks (§7.2: pending, then state) on the stored
	// record of an execution another node runs, before anything travels to it.
	CheckResponse(rec store.Execution, actionID string) error
	// ActionNotPending is the error for action actionID of an execution when it is not
	// pending: ACTION_ALREADY_RESOLVED or ACTION_NOT_FOUND.
	ActionNotPending(executionID, actionID string) error
	// StoredEvents reads committed events of execution id after the cursor (limit <= 0: all).
	StoredEvents(id string, after int64, limit int) ([]Event, error)
	// HotWindow is how many recent events a follower keeps in memory.
	HotWindow() int
	// Fence stops every execution this node runs under epoch, which another node claimed,
	// without committing anything for them; it returns how many.
	Fence(epoch int64) int
	// TakeOver finishes what stopped nodes left, for executions this node claimed, writing
	// under epoch: resumed here when their provider can re-attach, else failed naming the
	// stopped node. It returns those the store refused (to try again), and those not reached
	// once stop is closed.
	TakeOver(claimed []store.Execution, epoch int64, stop <-chan struct{}) (left []store.Execution)
	// Runs reports whether this node runs execution id (it is live here: started, resumed or
	// finishing, and not fenced).
	Runs(id string) bool
	// Track runs fn in a goroutine that Close waits for; false once the runtime is closing.
	Track(fn func()) bool
	// CheckOpen is ErrClosed once the runtime is closing.
	CheckOpen() error
}

package store

import (
	"context"
	"time"
)

// Cluster is implemented by stores that several nodes share (PostgreSQL); a single-node store
// (bbolt) does not implement it. The runtime checks for it with a type assertion: on a Cluster
// store it records each new execution's Owner, fails at Open only its own node's leftovers,
// and reaches executions owned by other nodes through commands.
type Cluster interface {
	// Node is this node's name (the Owner of the executions it starts).
	Node() string
	// Watch calls fn for wake-ups from commits of any node until stop is called. Notices may
	// be missed (a dropped connection): a receiver re-reads the store after each one, so a
	// missed notice only delays, never loses.
	Watch(fn func(Notice)) (stop func())
	// AcquireLease takes this node's lease under a new epoch, greater than any this node held
	// before, expiring ttl from now by the store's clock. Batches written for the executions
	// this node owns carry the epoch (Batch.Lease): a fencing token.
	AcquireLease(ctx context.Context, ttl time.Duration) (epoch int64, err error)
	// RenewLease extends the lease of epoch to ttl from now. It fails with ErrFenced when this
	// node no longer holds that epoch (another node claimed it, see ClaimExpired): then
	// every batch of that epoch fails with ErrFenced too, and the node must acquire a new one.
	// A lease that expired but that nobody claimed is renewed: nobody took anything over.
	RenewLease(ctx context.Context, epoch int64, ttl time.Duration) error
	// ClaimExpired atomically (one node wins) takes every node whose lease expired and returns
	// its non-terminal executions, each once, with this node as their Owner in the store. From
	// the claim on, the claimed node's epoch is fenced: it commits nothing more.
	ClaimExpired(ctx context.Context) ([]Execution, error)
	// OwnedUnfinished is this node's non-terminal executions (Owner = this node), as stored:
	// the cluster compares them with what the runtime runs, so that one nobody runs (a claim
	// that missed it, a goroutine lost) is noticed and finished.
	OwnedUnfinished(ctx context.Context) ([]Execution, error)
	// PostCommand records a command for the owner node (Command.Node) and wakes it.
	PostCommand(ctx context.Context, c Command) (id int64, err error)
	// PendingCommands are this node's unanswered commands, oldest first.
	PendingCommands(ctx context.Context) ([]Command, error)
	// AnswerCommand records the result of command id and wakes its poster.
	AnswerCommand(ctx context.Context, id int64, result []byte) error
	// CommandResult is command id's result; answered is false while it has none.
	CommandResult(ctx context.Context, id int64) (result []byte, answered bool, err error)
}

// NoticeKind says what a Notice is about.
type NoticeKind string

const (
	// NoticeEvents: a commit wrote events of ExecutionID, up to Sequence. A shared store sends
	// one per execution per commit, delivered once the commit is visible.
	NoticeEvents NoticeKind = "events"
	// NoticeCommand: a command (CommandID) was posted for this node.
	NoticeCommand NoticeKind = "command"
	// NoticeResult: command CommandID was answered.
	NoticeResult NoticeKind = "result"
)

// Notice is a wake-up from a commit on some node.
type Notice struct {
	Kind        NoticeKind
	ExecutionID string
	Sequence    int64
	CommandID   int64
}

// Command kinds.
const (
	CommandCancel  = "cancel"
	CommandRespond = "respond"
)

// Command asks the node that owns an execution to act on it.
type Command struct {
	ID          int64
	Node        string // the owner, who runs it
	Kind        string // CommandCancel or CommandRespond
	ExecutionID string
	ActionID    string // respond only
	Body        []byte // the request, as the kind defines it
}

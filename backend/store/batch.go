package store

// Batch is one atomic unit of durable change (docs/protocol.md §16.1): a store applies all of
// it in one transaction or none of it, and no reader ever sees part of it.
type Batch struct {
	Conversations []Conversation // put (insert or replace)
	Executions    []Execution    // put (insert or replace)
	Events        []StoredEvent  // insert; (execution, sequence) is unique
	Artifacts     []Artifact     // put, by (execution, index)
	Actions       []Action       // put, by request id
	Rules         []Rule         // put, by rule id (approvals.go)
	// Idempotency records are inserted: one that already exists for the same (tenant,
	// conversation, key) fails the whole batch with ErrConflict.
	Idempotency   []Idempotency
	Checkpoints   []Checkpoint    // put: execution id → the provider's checkpoint
	ProviderState []ProviderState // put: a provider's durable key/value
	// ProviderStateDeletions are provider state keys to delete (retention forgetting a
	// conversation), after this batch's puts.
	ProviderStateDeletions []string
	// Deletions removes executions with everything that hangs off them: events, artifacts,
	// checkpoint, outbox rows, action records (ActionIDs) and the idempotency record that
	// points at them — only if it still points at them (retention).
	Deletions []Execution
	// Erasures erase conversations with everything of them, leaving tombstones (erasure.go).
	Erasures []ConversationErasure
	// Seals seal conversations against starts and renames ahead of their erasure (seal.go),
	// before this batch's other writes.
	Seals []ConversationErasure
	// OutboxResults are the webhook sender's outcomes (outbox.go). New outbox rows are not
	// listed here: the store makes them from the events, in the same transaction, with the
	// OutboxPlanner.
	OutboxResults []OutboxResult
	// Usage puts executions' cumulative usage for sums (usage.go), replacing what each had.
	Usage []ExecutionUsage
	// Turns are starts under a busy policy other than parallel (turns.go): preconditions on
	// the conversation's other executions, checked in this batch's transaction, before its
	// records are written.
	Turns []Turn
	// Admissions are starts bounded by their tenant's max_running or budgets (admission.go):
	// preconditions on the tenant's other executions, checked in this batch's transaction,
	// before its records are written.
	Admissions []Admission
	// Lease is the epoch of this node's lease under which the batch's executions are owned
	// (Cluster.AcquireLease), the fencing token of a shared store: it applies the batch only
	// while the node still holds that epoch and fails it with ErrFenced otherwise, in the same
	// transaction, so a node taken for dead can never write again for what it owned. Zero: the
	// batch is not fenced (single-node stores, which have no leases, ignore it).
	Lease int64
}

// Size approximates the bytes b holds, for a bound on what waits for a commit.
func (b *Batch) Size() int {
	n := 256 * (len(b.Conversations) + len(b.Executions) + len(b.Artifacts) + len(b.Actions) + len(b.Idempotency) + len(b.Deletions) + len(b.OutboxResults) + len(b.Usage) + len(b.Rules) + len(b.Erasures) + len(b.Seals))
	for _, c := range b.Checkpoints {
		n += len(c.Data) + 64
	}
	for _, st := range b.ProviderState {
		n += len(st.Key) + len(st.Value) + 64
	}
	for _, key := range b.ProviderStateDeletions {
		n += len(key) + 64
	}
	for _, e := range b.Events {
		n += len(e.Event.JSON) + 64
	}
	return n
}

// Empty reports whether b changes nothing.
func (b *Batch) Empty() bool {
	return len(b.Conversations) == 0 && len(b.Executions) == 0 && len(b.Events) == 0 &&
		len(b.Artifacts) == 0 && len(b.Actions) == 0 && len(b.Rules) == 0 && len(b.Idempotency) == 0 && len(b.Deletions) == 0 &&
		len(b.Checkpoints) == 0 && len(b.ProviderState) == 0 && len(b.ProviderStateDeletions) == 0 &&
		len(b.OutboxResults) == 0 && len(b.Usage) == 0 && len(b.Erasures) == 0 && len(b.Seals) == 0
}

package backend

import (
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The commit path of one execution: a change is built under the execution's writeMu, handed to
// the store's group commit in sequence order, and published once durable (publish.go); a store
// that refuses it strands or fences the execution (refused.go).

// change is one atomic unit of docs/protocol.md §16.1: everything in it is committed in one
// store transaction and then published to readers at once.
type change struct {
	at          api.Timestamp    // event time (and the record's updatedAt when it changes)
	rec         *store.Execution // the new record, nil when the state does not change
	events      []newEvent
	actions     []store.Action
	artifacts   []store.Artifact
	idempotency []store.Idempotency
	rules       []store.Rule // a standing rule an answer created (approvals)
	turn        *store.Turn  // a start under a policy that queues or rejects (turns.go)
	// admission is a start bounded by its tenant's max_running or budgets (usagedesk.go).
	admission *store.Admission
	// byProvider marks a provider's emission: refused when it would take the execution past
	// its event limits (limits.go). Lifecycle events are never refused, so an execution can
	// always end.
	byProvider bool

	checkpoint []byte // the provider's checkpoint, committed with the rest; nil: unchanged
	// usage is the execution's usage row, put with the rest (usagereports.go); nil: unchanged.
	usage *usageChange
	// deadline, when set, bounds the wait for the commit (store.Request.Deadline): a start's,
	// on a shared store, so a stalled database answers its caller UNAVAILABLE in bounded time.
	deadline time.Time
}

// commit submits c and waits until it is durable and published: the lifecycle transitions
// whose outcome a caller is told (respond, cancel, the terminal state) and those a provider
// waits on (action requests). The caller holds x.writeMu. On failure nothing of c happened; if
// the store refused it, the execution is stranded (stranded.go).
func (x *execution) commit(c change) error {
	prevRec, prevSeq, prevBytes := x.wrec, x.nextSeq, x.eventBytes
	done, err := x.submit(c)
	if err != nil {
		return err
	}
	if err := <-done; err != nil {
		// Nothing of c is durable or visible, and nothing was submitted after it (writeMu is
		// held): the writers' view goes back to where it was.
		x.wrec, x.nextSeq, x.eventBytes = prevRec, prevSeq, prevBytes
		return storeError("commit execution change", err)
	}
	return nil
}

// enqueue submits c and returns without waiting for the commit: provider emissions. The events
// become visible to readers and subscribers only once their group commit is durable (nothing a
// caller can observe is ever uncommitted); a later change of the same execution is committed
// after it. A failed commit fails every later change of the execution (no gap can appear in its
// sequences) and strands it: the provider learns it from its context and at its next emission.
// The caller holds x.writeMu.
func (x *execution) enqueue(c change) error {
	_, err := x.submitChange(new(submission), c, false)
	return err
}

// enqueueEvent enqueues a change of the one event ne: a provider's emission, the commonest
// change of a live execution. ne is kept in the change's own submission, so its events slice
// costs no allocation of its own (a change passed to submitChange escapes whole).
func (x *execution) enqueueEvent(c change, ne newEvent) error {
	sub := new(submission)
	sub.newEvents[0] = ne
	c.events = sub.newEvents[:]
	_, err := x.submitChange(sub, c, false)
	return err
}

// submit hands c to the store's group commit and returns a channel that receives the outcome
// once c is durable and published (or failed). Sequences are assigned here, under x.writeMu,
// so submission order, sequence order, commit order and publication order are all the same.
// Once a change of the execution failed, every later one fails too (see store.Chain).
func (x *execution) submit(c change) (<-chan error, error) {
	return x.submitChange(new(submission), c, true)
}

// submitChange is submit, into sub (a new, empty submission); without wantDone (enqueue: the
// caller does not wait) no channel is made and the returned one is nil.
func (x *execution) submitChange(sub *submission, c change, wantDone bool) (<-chan error, error) {
	if err := x.chain.Err(); err != nil {
		return nil, storeError("commit execution change", err)
	}
	sub.batch = store.Batch{Actions: c.actions, Artifacts: c.artifacts, Idempotency: c.idempotency, Rules: c.rules, Lease: x.lease}
	batch := &sub.batch
	if c.turn != nil {
		batch.Turns = []store.Turn{*c.turn}
	}
	if c.admission != nil {
		batch.Admissions = []store.Admission{*c.admission}
	}
	if c.checkpoint != nil {
		batch.Checkpoints = []store.Checkpoint{{ExecutionID: x.id, Data: c.checkpoint}}
	}
	usageChange := c.usage
	if usageChange != nil {
		batch.Usage = []store.ExecutionUsage{usageChange.row}
	}
	var published *store.Execution
	if c.rec != nil {
		if c.rec.Execution.WaitingFor != nil && c.rec.Execution.State != api.ExecutionStateQueued {
			// Only a queued execution waits for its turn (turns.go): a cancellation or a
			// failure while it waited ends the wait too.
			c.rec.Execution.WaitingFor = nil
		}
		recs := &[2]store.Execution{*c.rec, *c.rec} // the batch's, and the one published
		batch.Executions = recs[:1]
		published = &recs[1]
	}
	var events []Event
	seq, added := x.nextSeq, 0
	if len(c.events) > 0 {
		if len(c.events) == 1 {
			events, batch.Events = sub.events[:], sub.stored[:]
		} else {
			events = make([]Event, len(c.events))
			batch.Events = make([]store.StoredEvent, len(c.events))
		}
		for i, ne := range c.events {
			seq++
			events[i] = Event{Sequence: seq, Type: ne.typ, JSON: ne.encode(x.id, seq, c.at)}
			batch.Events[i] = store.StoredEvent{ExecutionID: x.id, Event: events[i], Scope: &x.scope}
			added += len(events[i].JSON)
		}
	}
	if c.byProvider {
		if err := x.rt.opts.checkEventLimits(seq, x.eventBytes+int64(added)); err != nil {
			return nil, err
		}
	}
	var done chan error
	if wantDone {
		done = make(chan error, 1)
	}
	n := x.submitted.Load() + 1 // this submission's number (writeMu is held: the only writer)
	req := &sub.req
	*req = store.Request{Batch: batch, Chain: &x.chain, Deadline: c.deadline}
	sub.x, sub.published, sub.eventsOut, sub.usage, sub.n, sub.done = x, published, events, usageChange, n, done
	req.Settler = sub // told on the store's commit goroutine, in submission order (submission.go)
	if err := x.rt.store.Submit(req); err != nil {
		return nil, storeError("commit execution change", err)
	}
	x.submitted.Store(n)
	x.nextSeq = seq
	x.eventBytes += int64(added)
	if c.rec != nil {
		x.wrec = *c.rec
	}
	return done, nil
}

// abandonPendingAction adds the abandonment of the pending action (if any) to c and rec, for a
// transition out of awaiting_* other than a response (cancel, failure). The caller holds writeMu
// and calls reject on the result once c is committed. Abandoned actions answer ACTION_NOT_FOUND.
func (x *execution) abandonPendingAction(rec *store.Execution, c *change) *pendingAction {
	p := x.takePending()
	if p == nil {
		return nil
	}
	rec.PendingActionID = ""
	rec.Execution.PendingAction = nil
	c.actions = append(c.actions, x.actionRecord(p.request, store.ActionAbandoned))
	return p
}

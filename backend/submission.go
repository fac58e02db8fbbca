package backend

import (
	"errors"

	"github.com/harness-edge/harness-edge/backend/store"
)

// submission holds, in one allocation, what a change needs from its submission to its commit
// (submitChange, commit.go), and is told the commit's outcome (store.Settler): a provider's text
// delta is a change of its own, several per execution, and each used to allocate its batch,
// request and one-event slices separately, and a closure for its outcome.
type submission struct {
	batch     store.Batch
	req       store.Request
	newEvents [1]newEvent          // the change's event, when enqueueEvent put it here
	events    [1]Event             // the events, for a change of one event (the usual case)
	stored    [1]store.StoredEvent // their stored form

	// What Settled needs: the execution, the record and events to publish (nil when the
	// change has none), the usage row put with them, the submission's number (awaitSettled)
	// and where the submitter waits (nil: it does not).
	x         *execution
	published *store.Execution
	eventsOut []Event
	usage     *usageChange
	n         int64
	done      chan error
}

// Settled publishes the change once durable, or strands or stops the execution on failure; on
// the store's commit goroutine, in submission order.
func (sub *submission) Settled(err error) {
	x, batch, published := sub.x, &sub.batch, sub.published
	if err == nil {
		if len(batch.Turns) > 0 && published != nil {
			// What the store found the execution waits for (turns.go), written into the
			// batch's record in the commit: the published one says it too.
			published.Execution.WaitingFor = batch.Turns[0].WaitingFor
		}
		x.publish(published, sub.eventsOut)
		x.traceCommitted(published, sub.eventsOut)
		if len(sub.eventsOut) > 0 {
			x.rt.observer.EventsAppended(len(sub.eventsOut))
		}
		if sub.usage != nil {
			x.usageCommitted(sub.usage)
		}
	} else if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrBusy) || errors.Is(err, store.ErrNotAdmitted) {
		// Another node started the same idempotent request first, the conversation is busy
		// for a start that rejects, or the tenant's bounds leave no room: this execution
		// never existed (its start answers with the other one, CONVERSATION_BUSY or 429),
		// nothing is owed to it.
		x.stopRun(err)
	} else {
		x.strand(err)
	}
	if x.rt.cluster != nil { // only awaitSettled, on shared stores, needs to know
		x.settle(sub.n)
	}
	if sub.done != nil {
		sub.done <- err
	}
}

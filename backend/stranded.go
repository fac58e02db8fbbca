package backend

import (
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// An execution is stranded when the store refused one of its changes (a full disk, an I/O
// error). What it committed before is durable and published; nothing after is (its commit chain
// fails every later change unapplied, see store.Chain), so the published view (rec, log) is
// exactly what the store holds. Its provider is stopped at once: its work could not be kept.
//
// The runtime owes it one terminal event, and the stranded loop commits it as soon as the store
// accepts writes again, without a restart: state failed, PROVIDER_ERROR msgNotStored, one
// run.failed right after the last durable event, the pending action abandoned. Its streams then
// end and it leaves the live map as any finished execution does. A cancellation of a stranded
// execution joins that outcome: it answers with the failed execution once that is durable.
//
// Until then readers see the last durable state: a running execution reads as running and its
// streams carry keep-alives. Showing a terminal state that is not durable would let a crash
// contradict what a client was told; if the process stops first, restart recovery fails the
// execution the same way (one run.failed after its last durable event).
//
// An execution whose start was answered with an error (its record was never committed) is
// stopped and forgotten: it never existed for any caller.

// Retry bounds of the stranded loop while the store keeps refusing writes.
const (
	strandedRetryMin = 50 * time.Millisecond
	strandedRetryMax = 2 * time.Second
	// strandedPerCommit bounds how many stranded executions one repair transaction fails.
	strandedPerCommit = 256
)

// loop fails stranded executions, retrying with backoff while the store refuses, until
// stop (one of the runtime's late loops: it outlives the providers, whose last changes may
// strand their executions).
func (s *strandedExecutions) loop(stop <-chan struct{}) {
	backoff := strandedRetryMin
	timer := time.NewTimer(0)
	<-timer.C
	for {
		select {
		case <-s.wake:
		case <-stop:
			return
		}
		for xs := s.take(); len(xs) > 0; xs = s.take() {
			err := s.fail(xs)
			if err == nil {
				backoff = strandedRetryMin
				continue
			}
			s.rt.storeErrors.Error("store still refuses writes: stranded executions wait", err)
			timer.Reset(backoff)
			select {
			case <-timer.C:
			case <-stop:
				return
			}
			backoff = min(2*backoff, strandedRetryMax)
		}
	}
}

// fail fails xs; on error the ones not failed are queued again. One execution goes
// first, alone: while the store refuses, a retry costs one small transaction, not one per
// stranded execution. The batch that failed goes to the back of the queue, so an execution the
// store refuses for a reason of its own cannot hold up the others.
func (s *strandedExecutions) fail(xs []*execution) error {
	for i := 0; i < len(xs); {
		n := min(len(xs)-i, strandedPerCommit)
		if i == 0 {
			n = 1
		}
		if err := s.failBatch(xs[i : i+n]); err != nil {
			s.add(xs[i+n:]...)
			s.add(xs[i : i+n]...)
			return err
		}
		i += n
	}
	return nil
}

// strandedFailure is the terminal commit planned for one stranded execution.
type strandedFailure struct {
	x       *execution
	rec     store.Execution
	event   Event
	pending *pendingAction
}

// failBatch commits the failure of xs in one transaction and publishes it.
func (s *strandedExecutions) failBatch(xs []*execution) error {
	at := now()
	batch := &store.Batch{Lease: s.rt.leaseEpoch()}
	var planned []strandedFailure
	defer func() {
		for _, f := range planned {
			f.x.writeMu.Unlock()
		}
	}()
	for _, x := range xs {
		<-x.admitted
		if s.rt.live.get(x.id) != x || x.lease != batch.Lease {
			continue // its start was answered with an error, it finished, or it was fenced: nothing to fail
		}
		x.writeMu.Lock()
		f, err := x.planStrandedFailure(batch, at)
		if err != nil {
			x.writeMu.Unlock()
			return err
		}
		planned = append(planned, f)
	}
	if len(planned) == 0 {
		return nil
	}
	if err := s.rt.store.Commit(batch); err != nil {
		return err
	}
	s.rt.observer.EventsAppended(len(planned))
	for _, f := range planned {
		x := f.x
		// Nothing else of x is published any more (its chain fails every later change), so this
		// commit's publication follows the last one in commit order.
		x.publish(&f.rec, []Event{f.event})
		x.wrec, x.nextSeq = f.rec, f.event.Sequence
		x.takePending() // abandoned with the record (f.pending, rejected here)
		f.pending.reject(msgNotStored)
		x.finished()
		if op := x.cancelling; op != nil {
			op.finish(cloneExecution(f.rec.Execution), nil)
		}
	}
	return nil
}

// planStrandedFailure adds x's failure to batch (failRecord, as recovery fails a record), built
// on the durable (published) view. The caller holds x.writeMu.
func (x *execution) planStrandedFailure(batch *store.Batch, at api.Timestamp) (strandedFailure, error) {
	x.mu.RLock()
	rec, last := x.rec, x.log.Last()
	x.mu.RUnlock()
	var pending *pendingAction
	var abandoned *store.Action
	if id := rec.PendingActionID; id != "" {
		if x.pending != nil && x.pending.id == id {
			pending = x.pending
			action := x.actionRecord(pending.request, store.ActionPending)
			abandoned = &action
		} else {
			stored, found, err := x.rt.store.Action(id)
			if err != nil {
				return strandedFailure{}, err
			}
			if found {
				abandoned = &stored
			}
		}
	}
	rec, event := failRecord(batch, rec, abandoned, last, at, msgNotStored)
	return strandedFailure{x: x, rec: rec, event: event, pending: pending}, nil
}

// failClosed answers, once the stranded loop stopped (Close), the cancellations waiting
// for executions still stranded with ErrClosed; those executions are failed by recovery on the
// next Open.
func (s *strandedExecutions) failClosed() {
	for _, x := range s.take() {
		x.writeMu.Lock()
		if op := x.cancelling; op != nil {
			op.finish(cloneExecution(x.wrec.Execution), ErrClosed)
		}
		x.writeMu.Unlock()
	}
}

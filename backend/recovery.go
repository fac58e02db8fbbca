package backend

import (
	"errors"
	"fmt"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// recoverUnfinished fails every execution the previous process left non-terminal: state failed
// with PROVIDER_ERROR "Runtime restarted before the execution finished", exactly one run.failed
// appended after its last event, and its pending action abandoned (it answers ACTION_NOT_FOUND).
// A terminal state and its terminal event are always committed together, so a non-terminal
// record never has a terminal event yet. Returns how many executions it failed.
//
// A record that cannot be decoded is reported to undecodable and left as it is: its state is
// unknown, so it can be neither failed nor kept running, and every read of it answers
// INTERNAL_ERROR; the other executions recover and the runtime starts.
// Executions for which skip reports true are left alone (they are resumed, see resume.go).
func recoverUnfinished(s store.Store, lease int64, at time.Time, skip func(store.Execution) bool, undecodable func(id string, err error)) (int, error) {
	var unfinished []store.Execution
	// Collect first: committing from inside a read transaction could deadlock bbolt's remap.
	err := s.ForEachExecution(func(rec store.Execution) bool {
		if !isTerminalState(rec.Execution.State) && !skip(rec) {
			unfinished = append(unfinished, rec)
		}
		return true
	}, undecodable)
	if err != nil {
		return 0, err
	}
	failed, _, err := failAbandoned(s, lease, at, unfinished, func(store.Execution) string { return msgRestartedBeforeFinish }, undecodable, nil)
	if err != nil {
		return failed, fmt.Errorf("commit recovery: %w", err)
	}
	return failed, nil
}

// failAbandoned fails recs, executions whose runner is gone (this process before a restart, or
// a node whose lease another claimed), each with message(rec): up to perCommit of them per
// commit, written under lease (store.Batch.Lease). A commit the store refuses is done again one
// execution at a time, on fresh reads (failUnfinished): on a shared store another node may
// have finished some meanwhile. It stops at the first execution that cannot be failed and
// returns how many it failed, the ones left, and why; and between commits once stop is closed.
func failAbandoned(s store.Store, lease int64, at time.Time, recs []store.Execution, message func(store.Execution) string, undecodable func(id string, err error), stop <-chan struct{}) (failed int, left []store.Execution, err error) {
	const perCommit = 256
	for start := 0; start < len(recs); start += perCommit {
		select {
		case <-stop:
			return failed, recs[start:], nil
		default:
		}
		chunk := recs[start:min(start+perCommit, len(recs))]
		batch := &store.Batch{Lease: lease}
		added := 0
		ts := formatTimestamp(at)
		for i, rec := range chunk {
			ok, err := addFailure(s, batch, rec, ts, message(rec), undecodable)
			if err != nil {
				return failed, recs[start+i:], err
			}
			if ok {
				added++
			}
		}
		if added == 0 {
			continue
		}
		if err := s.Commit(batch); err == nil {
			failed += added
			continue
		}
		for i, rec := range chunk {
			ok, err := failUnfinished(s, lease, rec, message(rec), undecodable)
			if err != nil {
				return failed, recs[start+i:], err
			}
			if ok {
				failed++
			}
		}
	}
	return failed, nil, nil
}

// failUnfinished commits the failure of rec alone (see addFailure). When the store refuses it,
// the record is read again: another node may have finished it meanwhile (a takeover, or its
// owner, not quite dead, appended and took the sequence); what is still unfinished is tried
// again, a few times. failed reports whether this call committed the failure.
func failUnfinished(s store.Store, lease int64, rec store.Execution, message string, undecodable func(id string, err error)) (failed bool, err error) {
	const attempts = 3
	var commitErr error
	for range attempts {
		if isTerminalState(rec.Execution.State) {
			return false, nil
		}
		batch := &store.Batch{Lease: lease}
		added, err := addFailure(s, batch, rec, now(), message, undecodable)
		if err != nil || !added {
			return false, err
		}
		if commitErr = s.Commit(batch); commitErr == nil {
			return true, nil
		}
		fresh, found, err := s.Execution(rec.Execution.ID)
		if err != nil {
			return false, err
		}
		if !found {
			return false, nil // deleted meanwhile: nothing to fail
		}
		rec = fresh
	}
	return false, fmt.Errorf("fail execution %s after %d attempts: %w", rec.Execution.ID, attempts, commitErr)
}

// addFailure adds to batch the failure of the unfinished execution rec, whose owner is gone
// (this process before a restart, or another node whose lease expired), as failRecord fails
// every such record: state failed with PROVIDER_ERROR message, one run.failed after its last
// stored event, its pending action abandoned, no turn waited for.
//
// The log is the judge, not rec: on a shared store rec may have been read just before another
// node finished the execution (a takeover racing a restart). When the last stored event is
// already terminal, nothing is added and added is false. A finish committed after this read
// takes the same sequence, and the store refuses whichever commit comes second.
func addFailure(s store.Store, batch *store.Batch, rec store.Execution, at api.Timestamp, message string, undecodable func(id string, err error)) (added bool, err error) {
	id := rec.Execution.ID
	last, err := s.LastSequence(id)
	if err != nil {
		return false, fmt.Errorf("last sequence of %s: %w", id, err)
	}
	if last > 0 {
		tail, err := s.Events(id, last-1, 1)
		switch {
		case errors.Is(err, store.ErrUndecodable):
			// Damaged on disk: reads of the log answer INTERNAL_ERROR, but the execution is
			// failed all the same (a restart must not stop at it). The record, which is not
			// terminal, says the event is not: a terminal state is committed with its event.
			undecodable(id, damagedEventError{err})
		case err != nil:
			return false, fmt.Errorf("last event of %s: %w", id, err)
		}
		if len(tail) == 1 && tail[0].Terminal() {
			return false, nil
		}
	}
	var abandoned *store.Action
	if rec.PendingActionID != "" {
		action, found, err := s.Action(rec.PendingActionID)
		if err != nil {
			// A damaged action record stays as it is (answering it fails); the execution is
			// failed all the same.
			undecodable(id, fmt.Errorf("pending action %s: %w", rec.PendingActionID, err))
		} else if found {
			abandoned = &action
		}
	}
	failRecord(batch, rec, abandoned, last, at, message)
	return true, nil
}

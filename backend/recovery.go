package backend

import (
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
func recoverUnfinished(s store.Store, at time.Time, skip func(store.Execution) bool, undecodable func(id string, err error)) (int, error) {
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
	ts := formatTimestamp(at)
	const perCommit = 256
	for start := 0; start < len(unfinished); start += perCommit {
		batch := &store.Batch{}
		for _, rec := range unfinished[start:min(start+perCommit, len(unfinished))] {
			if err := addFailure(s, batch, rec, ts, msgRestartedBeforeFinish, undecodable); err != nil {
				return start, err
			}
		}
		if err := s.Commit(batch); err != nil {
			return start, fmt.Errorf("commit recovery: %w", err)
		}
	}
	return len(unfinished), nil
}

// addFailure adds to batch the failure of the unfinished execution rec, whose owner is gone
// (this process before a restart, or another node whose lease expired): state failed with
// PROVIDER_ERROR message, one run.failed after its last stored event, its pending action
// abandoned.
func addFailure(s store.Store, batch *store.Batch, rec store.Execution, at api.Timestamp, message string, undecodable func(id string, err error)) error {
	id := rec.Execution.ID
	last, err := s.LastSequence(id)
	if err != nil {
		return fmt.Errorf("last sequence of %s: %w", id, err)
	}
	if rec.PendingActionID != "" {
		action, found, err := s.Action(rec.PendingActionID)
		if err != nil {
			// A damaged action record stays as it is (answering it fails); the execution is
			// failed all the same.
			undecodable(id, fmt.Errorf("pending action %s: %w", rec.PendingActionID, err))
		} else if found {
			action.Status = store.ActionAbandoned
			batch.Actions = append(batch.Actions, action)
		}
		rec.PendingActionID = ""
	}
	rec.Execution.State = api.ExecutionStateFailed
	rec.Execution.Error = &api.ExecutionError{Code: string(CodeProviderError), Message: message}
	rec.Execution.EndedAt = &at
	rec.Execution.UpdatedAt = at
	rec.Execution.FinalOutput = nil
	batch.Executions = append(batch.Executions, rec)
	seq := last + 1
	data := mustData(map[string]string{"code": string(CodeProviderError), "message": message})
	batch.Events = append(batch.Events, store.StoredEvent{
		ExecutionID: id,
		Event:       Event{Sequence: seq, Type: api.StandardEventTypeRunFailed, JSON: encodeEvent(id, seq, api.StandardEventTypeRunFailed, at, data)},
	})
	return nil
}

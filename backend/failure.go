package backend

import (
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// failRecord is the one way the runtime fails a record nobody runs any more: restart recovery
// and takeovers (recovery.go, the runner is gone) and the stranded loop (stranded.go, the store
// refused its changes) both add to batch exactly this. rec becomes failed with PROVIDER_ERROR
// message at at, its pending action is abandoned (action, when the caller found it: it then
// answers ACTION_NOT_FOUND), it waits for its turn no more (turns.go), and one run.failed
// follows last, its last stored event. It returns the record and the event as committed, for
// the caller to publish.
func failRecord(batch *store.Batch, rec store.Execution, action *store.Action, last int64, at api.Timestamp, message string) (store.Execution, Event) {
	if rec.PendingActionID != "" {
		if action != nil {
			abandoned := *action
			abandoned.Status = store.ActionAbandoned
			batch.Actions = append(batch.Actions, abandoned)
		}
		rec.PendingActionID = ""
		rec.Execution.PendingAction = nil
	}
	markFailed(&rec, at, message)
	id, seq := rec.Execution.ID, last+1
	event := Event{Sequence: seq, Type: api.StandardEventTypeRunFailed, JSON: encodeEvent(id, seq, api.StandardEventTypeRunFailed, at, runFailedData(message))}
	batch.Executions = append(batch.Executions, rec)
	batch.Events = append(batch.Events, store.StoredEvent{ExecutionID: id, Event: event, Scope: store.ScopeOf(rec)})
	return rec, event
}

// markFailed makes rec failed with PROVIDER_ERROR message at at, whoever fails it: a live
// execution's own failure (failLocked, through the commit path) and failRecord. A failed
// execution has no final output and waits for no turn.
func markFailed(rec *store.Execution, at api.Timestamp, message string) {
	rec.Execution.State = api.ExecutionStateFailed
	rec.Execution.Error = &api.ExecutionError{Code: string(CodeProviderError), Message: message}
	rec.Execution.EndedAt = &at
	rec.Execution.UpdatedAt = at
	rec.Execution.FinalOutput = nil
	rec.Execution.WaitingFor = nil
}

// runFailedData is the data of the run.failed that ends a failed execution.
func runFailedData(message string) []byte {
	return mustData(map[string]string{"code": string(CodeProviderError), "message": message})
}

package backend

import (
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/bolt"
)

// SetBeforeRunHook installs a hook run at the start of every execution goroutine, before the
// execution leaves queued. Set it right after Open, before starting executions.
func SetBeforeRunHook(r *Runtime, hook func(executionID string)) { r.beforeRun = hook }

// SweepExpired runs one retention sweep as if the clock read at.
func SweepExpired(r *Runtime, at time.Time) (int, error) {
	return retentionSweep{r, r.opts.Retention}.sweepExpired(at)
}

// SetHotWindow changes how many recent events new executions keep in memory.
func SetHotWindow(r *Runtime, n int) { r.hotWindow = n }

// CanonicalJSON exposes the idempotency canonicalization.
func CanonicalJSON(v any) (string, error) {
	b, err := appendCanonicalJSON(nil, v)
	return string(b), err
}

// Fingerprint exposes the idempotency fingerprint.
var Fingerprint = requestFingerprint

// ExecutionIDs lists every execution in the store.
func ExecutionIDs(r *Runtime) ([]string, error) {
	var ids []string
	err := r.store.ForEachExecution(func(rec store.Execution) bool {
		ids = append(ids, rec.Execution.ID)
		return true
	}, func(string, error) {})
	return ids, err
}

// FailWrites makes every store write transaction fail with err, from now on, inside the
// store's commit loop, where a full disk fails one (nil: writes succeed again). Reads work.
func FailWrites(r *Runtime, err error) {
	r.store.(*bolt.Store).SetWriteFault(err)
}

// MsgNotStored is the error message of an execution failed because the store refused its
// changes.
const MsgNotStored = msgNotStored

// StoreErrorLogWindow is how often repeated store errors are summarised in the log.
const StoreErrorLogWindow = storeErrorLogWindow

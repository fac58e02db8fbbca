package backend

import "time"

// SetBeforeRunHook installs a hook run at the start of every execution goroutine, before the
// execution leaves queued. Set it right after Open, before starting executions.
func SetBeforeRunHook(r *Runtime, hook func(executionID string)) { r.beforeRun = hook }

// SweepExpired runs one retention sweep as if the clock read at.
func SweepExpired(r *Runtime, at time.Time) (int, error) { return r.sweepExpired(at) }

// HotWindow is how many recent events a live execution keeps in memory.
const HotWindow = maxHotEvents

// CanonicalJSON exposes the idempotency canonicalization.
func CanonicalJSON(v any) (string, error) {
	b, err := appendCanonicalJSON(nil, v)
	return string(b), err
}

// Fingerprint exposes the idempotency fingerprint.
var Fingerprint = requestFingerprint

package backend

import (
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
)

// retentionSweep deletes what outlived Options.Retention (one of the runtime's loops, started
// by Open when Retention is set).
type retentionSweep struct {
	r   *Runtime
	ttl time.Duration // Options.Retention
}

// sweepExpired deletes terminal executions that ended before now − Retention, with their events,
// artifacts, action records and idempotency record. Conversations are kept: they have no end;
// but what providers keep for a conversation goes once its last execution has (conversationdesk.go).
// Returns how many executions it deleted.
func (s retentionSweep) sweepExpired(at time.Time) (int, error) {
	r := s.r
	cutoff := at.Add(-s.ttl)
	var expired []store.Execution
	err := r.store.ForEachExecution(func(rec store.Execution) bool {
		e := rec.Execution
		if !isTerminalState(e.State) || e.EndedAt == nil {
			return true
		}
		ended, err := parseTimestamp(*e.EndedAt)
		if err == nil && ended.Before(cutoff) {
			expired = append(expired, rec)
		}
		return true
	}, r.damage.reportUndecodable)
	if err != nil {
		return 0, err
	}
	const perCommit = 128
	deleted := 0
	var gone []store.Execution
	for start := 0; start < len(expired); start += perCommit {
		batch := &store.Batch{}
		for _, rec := range expired[start:min(start+perCommit, len(expired))] {
			if r.live.get(rec.Execution.ID) != nil {
				continue // just finished and still being handed over; next sweep
			}
			r.finishedLogs.remove(rec.Execution.ID) // before the store forgets it
			batch.Deletions = append(batch.Deletions, rec)
		}
		if err := r.store.Commit(batch); err != nil {
			return deleted, err
		}
		deleted += len(batch.Deletions)
		gone = append(gone, batch.Deletions...)
	}
	r.conversationDesk.forget(gone, cutoff)
	if deleted > 0 {
		r.log.Info("retention sweep", "deleted", deleted)
	}
	return deleted, nil
}

// retentionInterval is how often the sweep runs: often enough that nothing outlives its TTL by
// much more than half of it, rarely enough that the scan stays cheap.
func retentionInterval(ttl time.Duration) time.Duration {
	return min(max(ttl/2, time.Second), time.Hour)
}

// loop sweeps every retentionInterval until stop (one of the runtime's loops).
func (s retentionSweep) loop(stop <-chan struct{}) {
	ticker := time.NewTicker(retentionInterval(s.ttl))
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case t := <-ticker.C:
			if _, err := s.sweepExpired(t); err != nil {
				s.r.log.Error("retention sweep", "err", err)
			}
			if _, err := s.r.finishSealed(); err != nil { // conversationseal.go
				s.r.log.Error("finish sealed conversations", "err", err)
			}
		}
	}
}

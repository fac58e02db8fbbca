package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Admissions (store.Admission, docs/usage.md "Budgets"): a start's tenant's non-terminal
// executions and recent usage, read inside the write transaction. bbolt has one writer, the
// commit goroutine, so what an admission reads there is the whole truth at that point: every
// earlier commit, and the earlier batches of this one (a group with an admission writes every
// version of each record, see latestExecutionRecords).
//
// Which executions are not terminal is kept in memory (unfinishedSet): no index finds a
// tenant's running executions, and a walk of every execution per start would not do. The set
// is built the first time an admission is applied (a walk of executions_by_time, reading the
// records of the non-terminal ones), so a store without budgets or max_running pays nothing;
// from then on every commit keeps it, through an overlay merged only once the transaction is
// committed.

type unfinishedEntry struct {
	tenant, provider string
	createdMs        int64
}

// unfinishedSet is every non-terminal execution once built (commit goroutine only).
type unfinishedSet struct {
	built bool
	byID  map[string]unfinishedEntry
}

// unfinishedTx is one transaction's view of the set: built in it (fresh), or the set with the
// transaction's changes over it (nil: finished or deleted).
type unfinishedTx struct {
	set     *unfinishedSet
	fresh   map[string]unfinishedEntry
	changes map[string]*unfinishedEntry
}

func (s *unfinishedSet) begin() *unfinishedTx {
	return &unfinishedTx{set: s, changes: map[string]*unfinishedEntry{}}
}

// tracking reports whether the transaction must note its records' states.
func (ut *unfinishedTx) tracking() bool { return ut.set.built || ut.fresh != nil }

// record notes a written execution record.
func (ut *unfinishedTx) record(rec *store.Execution) {
	if !ut.tracking() {
		return
	}
	var e *unfinishedEntry
	if !rec.Execution.State.Terminal() {
		e = &unfinishedEntry{tenant: rec.Tenant, provider: rec.Execution.ProviderID,
			createdMs: int64(store.PositionOf(rec.Execution).CreatedMs)}
	}
	ut.changes[rec.Execution.ID] = e
}

// remove notes a deleted execution.
func (ut *unfinishedTx) remove(id string) {
	if ut.tracking() {
		ut.changes[id] = nil
	}
}

// commit merges the transaction's view into the set (the transaction was committed).
func (ut *unfinishedTx) commit() {
	if ut.fresh != nil {
		ut.set.byID, ut.set.built = ut.fresh, true
	}
	if !ut.set.built {
		return
	}
	for id, e := range ut.changes {
		if e == nil {
			delete(ut.set.byID, id)
		} else {
			ut.set.byID[id] = *e
		}
	}
}

// build reads the set from tx when it was never built.
func (ut *unfinishedTx) build(tx *bbolt.Tx) error {
	if ut.tracking() {
		return nil
	}
	fresh := map[string]unfinishedEntry{}
	records := tx.Bucket(bucketExecutions)
	err := tx.Bucket(bucketExecutionsByTime).ForEach(func(k, state []byte) error {
		if api.ExecutionState(state).Terminal() || len(k) <= 8 {
			return nil
		}
		id := k[8:]
		raw := records.Get(id)
		if raw == nil {
			return nil
		}
		var rec store.Execution
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil // undecodable: recovery reports it; it runs nowhere
		}
		fresh[string(id)] = unfinishedEntry{tenant: rec.Tenant, provider: rec.Execution.ProviderID,
			createdMs: int64(binary.BigEndian.Uint64(k[:8]))}
		return nil
	})
	ut.fresh = fresh
	return err
}

// unfinishedOf lists tenant's non-terminal executions as the transaction leaves them.
func (ut *unfinishedTx) unfinishedOf(tenant string) map[string]unfinishedEntry {
	base := ut.fresh
	if base == nil {
		base = ut.set.byID
	}
	out := map[string]unfinishedEntry{}
	for id, e := range base {
		if _, changed := ut.changes[id]; !changed && e.tenant == tenant {
			out[id] = e
		}
	}
	for id, e := range ut.changes {
		if e != nil && e.tenant == tenant {
			out[id] = *e
		}
	}
	return out
}

// applyAdmissions settles b's admissions before b's records are written.
func applyAdmissions(tx *bbolt.Tx, b *store.Batch, ut *unfinishedTx) error {
	if err := ut.build(tx); err != nil {
		return fmt.Errorf("find the unfinished executions: %w", err)
	}
	for i := range b.Admissions {
		a := &b.Admissions[i]
		view, err := admissionView(tx, ut, a)
		if err != nil {
			return fmt.Errorf("admission of %s: %w", a.ExecutionID, err)
		}
		if err := store.SettleAdmission(a, view); err != nil {
			return err
		}
	}
	return nil
}

// admissionView reads a's tenant's non-terminal executions and its usage rows created since
// the earliest RecentFromMs of a's budgets (the usage bucket's tenant-and-time order).
func admissionView(tx *bbolt.Tx, ut *unfinishedTx, a *store.Admission) (store.AdmissionView, error) {
	view := store.AdmissionView{}
	unfinished := ut.unfinishedOf(a.Tenant)
	for id, e := range unfinished {
		view[id] = store.TenantExecution{ID: id, ProviderID: e.provider, CreatedMs: e.createdMs, Unfinished: true}
	}
	if len(a.Budgets) == 0 {
		return view, nil
	}
	bucket := tx.Bucket(bucketUsage)
	if bucket == nil {
		return view, nil // nothing reported usage yet
	}
	from := a.Budgets[0].RecentFromMs
	for _, c := range a.Budgets[1:] {
		from = min(from, c.RecentFromMs)
	}
	prefix := usageTenantPrefix(a.Tenant)
	c := bucket.Cursor()
	for k, v := c.Seek(binary.BigEndian.AppendUint64(bytes.Clone(prefix), uint64(max(from, 0)))); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		r, err := store.DecodeUsageRecord(v, json.Unmarshal)
		if err != nil {
			return nil, fmt.Errorf("stored usage record %q: %w: %w", k, store.ErrUndecodable, err)
		}
		view.UsageRow(r) // a running execution's entry stays running
	}
	return view, nil
}

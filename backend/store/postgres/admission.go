package postgres

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Admissions across nodes (store.Admission, docs/usage.md "Budgets"). A group with admissions
// first takes a transaction-scoped advisory lock per tenant (in name order, so two nodes never
// wait for each other in a circle), THEN reads the tenants' non-terminal executions and their
// recent usage, in statements of their own. The order matters: under READ COMMITTED a
// statement's snapshot is taken when it starts, before it waits on any lock, so a read in the
// locking statement could miss what the previous holder of the lock committed. Every node's
// admission for a tenant takes the same lock, so they are serialized across nodes: each sees
// every execution the admissions before it created. What is read is then kept up to date with
// the group's own batches as they are added (groupWriter.admissions).
//
// The non-terminal executions are read before the usage rows: an execution that finishes in
// between is then counted as running (the larger of its usage and the reservation), never
// with a usage older than its end.

// admissionLockSpace keeps the tenant locks' keys apart from any other advisory lock.
const admissionLockSpace = "harness-edge admission "

// hasAdmissions reports whether a batch of group carries an admission.
func hasAdmissions(group []*store.Request) bool {
	for _, req := range group {
		if len(req.Batch.Admissions) > 0 {
			return true
		}
	}
	return false
}

// loadAdmissions locks the tenants of group's admissions and reads what settles them.
func loadAdmissions(ctx context.Context, tx pgx.Tx, group []*store.Request) (map[string]store.AdmissionView, error) {
	from := map[string]int64{} // tenant → the earliest usage an admission needs (-1: none)
	for _, req := range group {
		for _, a := range req.Batch.Admissions {
			earliest, seen := from[a.Tenant]
			if !seen {
				earliest = -1
			}
			for _, c := range a.Budgets {
				if earliest < 0 || c.RecentFromMs < earliest {
					earliest = c.RecentFromMs
				}
			}
			from[a.Tenant] = earliest
		}
	}
	tenants := make([]string, 0, len(from))
	for t := range from {
		tenants = append(tenants, t)
	}
	slices.Sort(tenants)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($2 || t, 0))
		FROM (SELECT t FROM unnest($1::text[]) AS t ORDER BY t) AS ordered`, tenants, admissionLockSpace); err != nil {
		return nil, commitError(err)
	}
	views := map[string]store.AdmissionView{}
	for _, t := range tenants {
		views[t] = store.AdmissionView{}
	}
	rows, err := tx.Query(ctx, `SELECT id, tenant, coalesce(record->>'providerId', ''), created_ms FROM executions
		WHERE tenant = ANY($1) AND state NOT IN `+terminalStates, tenants)
	if err != nil {
		return nil, commitError(err)
	}
	for rows.Next() {
		var x store.TenantExecution
		var tenant string
		if err := rows.Scan(&x.ID, &tenant, &x.ProviderID, &x.CreatedMs); err != nil {
			rows.Close()
			return nil, err
		}
		x.Unfinished = true
		views[tenant][x.ID] = x
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, commitError(err)
	}
	var usageTenants []string
	var usageFrom []int64
	for _, t := range tenants {
		if from[t] >= 0 {
			usageTenants, usageFrom = append(usageTenants, t), append(usageFrom, from[t])
		}
	}
	if len(usageTenants) == 0 {
		return views, nil
	}
	rows, err = tx.Query(ctx, `SELECT u.execution_id, u.tenant, u.provider_id, u.created_ms, u.total_tokens,
			u.cost_micros, u.currency
		FROM execution_usage u JOIN unnest($1::text[], $2::int8[]) AS q(tenant, from_ms)
			ON u.tenant = q.tenant AND u.created_ms >= q.from_ms`, usageTenants, usageFrom)
	if err != nil {
		return nil, commitError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r store.ExecutionUsage
		if err := rows.Scan(&r.ExecutionID, &r.Tenant, &r.ProviderID, &r.CreatedMs, &r.Usage.TotalTokens,
			&r.Usage.Cost.Micros, &r.Usage.Cost.Currency); err != nil {
			return nil, err
		}
		views[r.Tenant].UsageRow(r) // a running execution's entry stays running
	}
	return views, commitError(rows.Err())
}

// settleAdmissions settles b's admissions (before its records are put) against what was read
// and the group's earlier batches.
func (w *groupWriter) settleAdmissions(b *store.Batch) error {
	for i := range b.Admissions {
		a := &b.Admissions[i]
		if err := store.SettleAdmission(a, w.admissions[a.Tenant]); err != nil {
			return err
		}
	}
	return nil
}

// noteForAdmissions lays b's records and usage rows over the views of the group's admissions.
func (w *groupWriter) noteForAdmissions(b *store.Batch) {
	if w.admissions == nil {
		return
	}
	for _, rec := range b.Executions {
		if view, ok := w.admissions[rec.Tenant]; ok {
			view.Record(rec)
		}
	}
	for _, r := range b.Usage {
		if view, ok := w.admissions[r.Tenant]; ok {
			view.UsageRow(r)
		}
	}
}

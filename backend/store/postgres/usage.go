package postgres

import (
	"context"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Usage rows (migrations/00008_execution_usage.sql): written with the group's other statements,
// read by a tenant's creation-time range.

// queueUsage writes rows; a later row of the same execution in the group replaces an earlier
// one, as it would applied in order. The WHERE keeps a row from going down: values are
// cumulative, so a lower one can only be stale.
func (w *groupWriter) queueUsage(rows []store.ExecutionUsage) {
	if len(rows) == 0 {
		return
	}
	latest := map[string]int{}
	var keep []store.ExecutionUsage
	for _, r := range rows {
		if i, ok := latest[r.ExecutionID]; ok {
			keep[i] = r
			continue
		}
		latest[r.ExecutionID] = len(keep)
		keep = append(keep, r)
	}
	n := len(keep)
	ids, tenants, convs, providers, currencies := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	var created, in, out, cr, cw, th, tot, cost []int64
	for _, r := range keep {
		u := r.Usage
		ids, tenants, convs, providers = append(ids, r.ExecutionID), append(tenants, r.Tenant), append(convs, r.ConversationID), append(providers, r.ProviderID)
		currencies = append(currencies, u.Cost.Currency)
		created, in, out = append(created, r.CreatedMs), append(in, u.InputTokens), append(out, u.OutputTokens)
		cr, cw, th = append(cr, u.CachedReadTokens), append(cw, u.CachedWriteTokens), append(th, u.ThoughtTokens)
		tot, cost = append(tot, u.TotalTokens), append(cost, u.Cost.Micros)
	}
	w.stmts.Queue(`INSERT INTO execution_usage (execution_id, tenant, conversation_id, provider_id, created_ms,
			input_tokens, output_tokens, cached_read_tokens, cached_write_tokens, thought_tokens, total_tokens,
			cost_micros, currency)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[], $6::int8[], $7::int8[],
			$8::int8[], $9::int8[], $10::int8[], $11::int8[], $12::int8[], $13::text[])
		ON CONFLICT (execution_id) DO UPDATE SET input_tokens = EXCLUDED.input_tokens,
			output_tokens = EXCLUDED.output_tokens, cached_read_tokens = EXCLUDED.cached_read_tokens,
			cached_write_tokens = EXCLUDED.cached_write_tokens, thought_tokens = EXCLUDED.thought_tokens,
			total_tokens = EXCLUDED.total_tokens, cost_micros = EXCLUDED.cost_micros, currency = EXCLUDED.currency
		WHERE EXCLUDED.total_tokens >= execution_usage.total_tokens
			AND EXCLUDED.cost_micros >= execution_usage.cost_micros`,
		ids, tenants, convs, providers, created, in, out, cr, cw, th, tot, cost, currencies)
}

// ForEachUsage reads q's rows, by the tenant-and-time index.
func (s *Store) ForEachUsage(q store.UsageQuery, visit func(store.ExecutionUsage) bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT execution_id, tenant, conversation_id, provider_id, created_ms,
			input_tokens, output_tokens, cached_read_tokens, cached_write_tokens, thought_tokens, total_tokens,
			cost_micros, currency
		FROM execution_usage WHERE tenant = $1 AND created_ms >= $2 AND created_ms < $3`, q.Tenant, q.FromMs, q.ToMs)
	if err != nil {
		return readError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r store.ExecutionUsage
		u := &r.Usage
		if err := rows.Scan(&r.ExecutionID, &r.Tenant, &r.ConversationID, &r.ProviderID, &r.CreatedMs,
			&u.InputTokens, &u.OutputTokens, &u.CachedReadTokens, &u.CachedWriteTokens, &u.ThoughtTokens,
			&u.TotalTokens, &u.Cost.Micros, &u.Cost.Currency); err != nil {
			return readError(err)
		}
		if !visit(r) {
			return nil
		}
	}
	return readError(rows.Err())
}

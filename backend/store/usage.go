package store

import "github.com/harness-edge/harness-edge/backend/usage"

// ExecutionUsage is an execution's usage as the store keeps it for sums (docs/usage.md): the
// execution's cumulative usage with what a sum is grouped or filtered by. A Batch puts it beside
// the execution record that carries the same usage, so the two never disagree; a put replaces
// the execution's previous value (cumulative, so a commit retried after it was applied, or a
// takeover that continues from the stored value, can never count anything twice).
//
// Rows outlive their executions: retention removes records and events, not what was spent
// (a month's totals must not shrink because last week's executions were swept).
type ExecutionUsage struct {
	ExecutionID    string
	Tenant         string
	ConversationID string
	ProviderID     string
	// CreatedMs is the execution's creation time (store.PositionOf's CreatedMs): the time a sum
	// over a range counts it at, whenever its usage was reported.
	CreatedMs int64
	Usage     usage.Usage
}

// UsageQuery selects the usage rows of one tenant whose execution was created in
// [FromMs, ToMs).
type UsageQuery struct {
	Tenant       string
	FromMs, ToMs int64
}

// UsageReader is the part of the store that sums are read from. Every store implements it.
type UsageReader interface {
	// ForEachUsage visits q's rows (in no promised order); returning false stops the walk.
	ForEachUsage(q UsageQuery, visit func(ExecutionUsage) bool) error
}

// usageRecord is ExecutionUsage's stored JSON (both stores): short keys, zero counts left out.
type usageRecord struct {
	ExecutionID       string `json:"e"`
	Tenant            string `json:"t,omitempty"`
	ConversationID    string `json:"c"`
	ProviderID        string `json:"p"`
	CreatedMs         int64  `json:"ms"`
	InputTokens       int64  `json:"in,omitempty"`
	OutputTokens      int64  `json:"out,omitempty"`
	CachedReadTokens  int64  `json:"cr,omitempty"`
	CachedWriteTokens int64  `json:"cw,omitempty"`
	ThoughtTokens     int64  `json:"th,omitempty"`
	TotalTokens       int64  `json:"tot,omitempty"`
	CostMicros        int64  `json:"cost,omitempty"`
	Currency          string `json:"cur,omitempty"`
}

// UsageRecord is r's stored JSON form (a value of JSON's encoder).
func UsageRecord(r ExecutionUsage) any {
	u := r.Usage
	return usageRecord{
		ExecutionID: r.ExecutionID, Tenant: r.Tenant, ConversationID: r.ConversationID,
		ProviderID: r.ProviderID, CreatedMs: r.CreatedMs,
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedReadTokens: u.CachedReadTokens,
		CachedWriteTokens: u.CachedWriteTokens, ThoughtTokens: u.ThoughtTokens, TotalTokens: u.TotalTokens,
		CostMicros: u.Cost.Micros, Currency: u.Cost.Currency,
	}
}

// DecodeUsageRecord reads UsageRecord's JSON back.
func DecodeUsageRecord(raw []byte, unmarshal func([]byte, any) error) (ExecutionUsage, error) {
	var r usageRecord
	if err := unmarshal(raw, &r); err != nil {
		return ExecutionUsage{}, err
	}
	return ExecutionUsage{
		ExecutionID: r.ExecutionID, Tenant: r.Tenant, ConversationID: r.ConversationID,
		ProviderID: r.ProviderID, CreatedMs: r.CreatedMs,
		Usage: usage.Usage{
			InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CachedReadTokens: r.CachedReadTokens,
			CachedWriteTokens: r.CachedWriteTokens, ThoughtTokens: r.ThoughtTokens, TotalTokens: r.TotalTokens,
			Cost: usage.Money{Micros: r.CostMicros, Currency: r.Currency},
		},
	}, nil
}

package a2a

import (
	"encoding/json"
	"math"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/harness-edge/harness-edge/backend/usage"
)

// Usage (docs/usage.md, "A2A"). A2A has no usage field of its own, so an agent reports it in
// metadata under the key "usage", on the task, on a status update, or on one of its messages:
//
//	"metadata": {"usage": {"inputTokens": 1200, "outputTokens": 300, "cachedReadTokens": 800,
//	  "cachedWriteTokens": 0, "thoughtTokens": 40, "totalTokens": 1540,
//	  "cost": {"amount": 0.0123, "currency": "USD"}}}
//
// (the shape of ACP's usage and cost; amount a number or a decimal string). The values are the
// task's so far — cumulative, as a task snapshot's would be — and each one that changes is
// reported (Run.ReportUsage). A value that is not a number, or a negative or absurd one, makes
// the report one the runtime ignores and logs.

// usageKey is the metadata key read.
const usageKey = "usage"

// usageOf finds the usage an event carries; ok is false when it carries none.
func usageOf(ev a2a.Event) (u usage.Usage, ok bool) {
	var meta map[string]any
	switch e := ev.(type) {
	case *a2a.Task:
		meta = e.Metadata
	case *a2a.TaskStatusUpdateEvent:
		meta = e.Metadata
		if raw, found := meta[usageKey]; (!found || raw == nil) && e.Status.Message != nil {
			meta = e.Status.Message.Metadata
		}
	case *a2a.Message:
		meta = e.Metadata
	}
	raw, found := meta[usageKey].(map[string]any)
	if !found {
		return usage.Usage{}, false
	}
	return parseUsage(raw), true
}

// parseUsage reads the metadata's object; what is not a count becomes -1, which the runtime
// refuses (logged once per execution).
func parseUsage(raw map[string]any) usage.Usage {
	count := func(key string) int64 {
		switch v := raw[key].(type) {
		case nil:
			return 0
		case float64:
			if v != math.Trunc(v) || v < 0 || v > usage.MaxCount {
				return -1
			}
			return int64(v)
		case json.Number:
			n, err := v.Int64()
			if err != nil {
				return -1
			}
			return n
		}
		return -1
	}
	u := usage.Usage{
		InputTokens: count("inputTokens"), OutputTokens: count("outputTokens"),
		CachedReadTokens: count("cachedReadTokens"), CachedWriteTokens: count("cachedWriteTokens"),
		ThoughtTokens: count("thoughtTokens"), TotalTokens: count("totalTokens"),
	}
	if cost, ok := raw["cost"].(map[string]any); ok {
		currency, _ := cost["currency"].(string)
		u.Cost = usage.Money{Micros: -1, Currency: currency}
		switch a := cost["amount"].(type) {
		case float64:
			if m, err := usage.MicrosFromFloat(a); err == nil {
				u.Cost.Micros = m
			}
		case string:
			if m, err := usage.ParseAmount(a); err == nil {
				u.Cost.Micros = m
			}
		}
	}
	return u
}

// reportUsage reports the usage ev carries, if any and if it changed.
func (t *taskRun) reportUsage(ev a2a.Event) error {
	u, ok := usageOf(ev)
	if !ok {
		return nil
	}
	if prev := t.reportedUsage; prev != nil && u.Cost == (usage.Money{}) {
		u.Cost = prev.Cost // a report without a cost keeps the task's cost so far
	}
	if t.reportedUsage != nil && *t.reportedUsage == u {
		return nil
	}
	t.reportedUsage = &u
	return t.run.ReportUsage(u)
}

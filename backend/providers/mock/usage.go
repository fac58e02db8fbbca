package mock

import (
	"encoding/json"
	"math"

	"github.com/harness-edge/harness-edge/backend/usage"
)

// Usage, for tests and demos (docs/usage.md): the execution config's "usage" object is what
// each step costs — a step is one emitted chunk — and after each step the mock reports the
// cumulative usage so far, as a real agent reports after each model call:
//
//	{"usage": {"inputTokens": 10, "outputTokens": 5, "cost": "0.0010", "currency": "USD"},
//	 "repeat": 1000}
//
// Counts are passed through as given (a negative or huge one is the runtime's to refuse, which
// is how its handling of a bad report is tested). "repeat" emits the output that many times
// (at most maxRepeat): a looping agent, for budgets to stop.

const maxRepeat = 1_000_000

// stepUsage reads config "usage"; ok is false when there is none (or it is not an object).
func stepUsage(cfg map[string]any) (step usage.Usage, ok bool) {
	raw, ok := cfg["usage"].(map[string]any)
	if !ok {
		return usage.Usage{}, false
	}
	count := func(key string) int64 {
		switch v := raw[key].(type) {
		case float64:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return -1
			}
			return int64(math.Max(math.Min(v, math.MaxInt64/2), math.MinInt64/2))
		case json.Number:
			n, _ := v.Int64()
			return n
		}
		return 0
	}
	step = usage.Usage{
		InputTokens: count("inputTokens"), OutputTokens: count("outputTokens"),
		CachedReadTokens: count("cachedReadTokens"), CachedWriteTokens: count("cachedWriteTokens"),
		ThoughtTokens: count("thoughtTokens"), TotalTokens: count("totalTokens"),
	}
	if cur, _ := raw["currency"].(string); cur != "" {
		step.Cost.Currency = cur
		switch c := raw["cost"].(type) {
		case string:
			if m, err := usage.ParseAmount(c); err == nil {
				step.Cost.Micros = m
			} else {
				step.Cost.Micros = -1 // malformed: reported as such, refused by the runtime
			}
		case float64:
			if m, err := usage.MicrosFromFloat(c); err == nil {
				step.Cost.Micros = m
			} else {
				step.Cost.Micros = -1
			}
		}
	}
	return step, true
}

// times is step added n times (n ≥ 1), saturating rather than wrapping.
func times(step usage.Usage, n int64) usage.Usage {
	mul := func(v int64) int64 {
		if v != 0 && (v > math.MaxInt64/n || v < math.MinInt64/n) {
			if v < 0 {
				return math.MinInt64
			}
			return math.MaxInt64
		}
		return v * n
	}
	return usage.Usage{
		InputTokens: mul(step.InputTokens), OutputTokens: mul(step.OutputTokens),
		CachedReadTokens: mul(step.CachedReadTokens), CachedWriteTokens: mul(step.CachedWriteTokens),
		ThoughtTokens: mul(step.ThoughtTokens), TotalTokens: mul(step.TotalTokens),
		Cost: usage.Money{Micros: mul(step.Cost.Micros), Currency: step.Cost.Currency},
	}
}

// repeat is config "repeat" when it is a whole number from 1 to maxRepeat, else 1.
func repeat(cfg map[string]any) int {
	v, ok := cfg["repeat"].(float64)
	if !ok || v < 1 || v != math.Trunc(v) {
		return 1
	}
	return int(math.Min(v, maxRepeat))
}

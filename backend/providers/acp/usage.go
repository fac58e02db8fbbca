package acp

import (
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/harness-edge/harness-edge/backend/usage"
)

// Usage (docs/usage.md, "ACP"). Agents report it in two messages, both unstable in ACP:
//
//   - session/prompt's result carries `usage`: the prompt turn's tokens (input, output, cached
//     read and write, thought, total). A turn is one execution, so these are the execution's.
//   - the `usage_update` session update carries the context window (size, used) and `cost`,
//     the session's cumulative cost with its currency. A conversation's executions share one
//     native session, so the execution's cost is the growth of that figure during its turn:
//     the session's cost when the turn began (stored with the conversation, so a turn served by
//     a new process or another node knows it) is subtracted.
//
// Each message reports the execution's usage so far (Run.ReportUsage, cumulative); the runtime
// refuses what cannot be right (a negative count, a cost that goes down) and the turn goes on.

// turnUsage is what a turn learnt of its usage.
type turnUsage struct {
	mu       sync.Mutex
	baseline usage.Money // the session's cumulative cost when the turn began
	session  usage.Money // the session's latest cumulative cost
	bad      bool        // a cost that could not be read: reported as such (refused) once
	tokens   *acpsdk.Usage
	size     int64
	used     int64
}

// begin sets the baseline: the stored cost of the session the turn continues, none for a new
// session.
func (u *turnUsage) begin(stored *conversationState, native acpsdk.SessionId) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if stored != nil && stored.SessionID == string(native) && stored.Currency != "" {
		u.baseline = usage.Money{Micros: stored.CostMicros, Currency: stored.Currency}
		u.session = u.baseline
	}
}

// carry puts the session's latest cost into the conversation's state.
func (u *turnUsage) carry(st conversationState) conversationState {
	u.mu.Lock()
	defer u.mu.Unlock()
	st.CostMicros, st.Currency = u.session.Micros, u.session.Currency
	return st
}

// updated takes a usage_update.
func (u *turnUsage) updated(update *acpsdk.SessionUsageUpdate) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.size, u.used = int64(update.Size), int64(update.Used)
	if update.Cost == nil {
		return
	}
	micros, err := usage.MicrosFromFloat(update.Cost.Amount)
	if err != nil {
		u.bad = true
		return
	}
	if u.baseline.Currency != "" && u.baseline.Currency != update.Cost.Currency || micros < u.baseline.Micros {
		// Another currency, or the agent's counter started again (a new process that does not
		// carry the session's cost over): the turn's cost counts from zero.
		u.baseline = usage.Money{Currency: update.Cost.Currency}
	}
	u.session = usage.Money{Micros: micros, Currency: update.Cost.Currency}
}

// hasCost reports whether the agent reported a cost for the session.
func (u *turnUsage) hasCost() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.session.Currency != ""
}

// answered takes the prompt result's usage.
func (u *turnUsage) answered(tokens *acpsdk.Usage) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.tokens = tokens
}

// current is the execution's usage so far; ok is false when the agent reported nothing.
func (u *turnUsage) current() (out usage.Usage, ok bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if t := u.tokens; t != nil {
		deref := func(p *int) int64 {
			if p == nil {
				return 0
			}
			return int64(*p)
		}
		out = usage.Usage{
			InputTokens: int64(t.InputTokens), OutputTokens: int64(t.OutputTokens), TotalTokens: int64(t.TotalTokens),
			CachedReadTokens: deref(t.CachedReadTokens), CachedWriteTokens: deref(t.CachedWriteTokens),
			ThoughtTokens: deref(t.ThoughtTokens),
		}
		ok = true
	}
	if u.session.Currency != "" {
		out.Cost = usage.Money{Micros: u.session.Micros - u.baseline.Micros, Currency: u.session.Currency}
		ok = true
	}
	if u.bad {
		out.Cost = usage.Money{Micros: -1, Currency: "USD"} // the runtime refuses and logs it
		u.bad, ok = false, true
	}
	if u.size != 0 || u.used != 0 {
		out.ContextSize, out.ContextUsed = u.size, u.used
		ok = true
	}
	return out, ok
}

// reportUsage reports the turn's usage so far, unless Run has returned.
func (t *turn) reportUsage() error {
	u, ok := t.usage.current()
	if !ok {
		return nil
	}
	t.emitMu.RLock()
	defer t.emitMu.RUnlock()
	if t.sealed {
		return nil
	}
	return t.run.ReportUsage(u)
}

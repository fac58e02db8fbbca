package budget

import (
	"sync"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/usage"
)

// What a tenant spent in one window: each execution's latest cumulative usage, and the sums
// kept up to date as those change. Values per execution only ever grow (usage is cumulative),
// so merging a value — from a scan or a report, in any order, any number of times — takes the
// larger one and adds only the difference to the sums.

type windowKey struct {
	tenant string
	window Window
	start  int64 // the window's start, Unix ms
}

type execSpend struct {
	provider string
	tokens   int64
	cost     usage.Money
}

type sums struct {
	tokens int64
	cost   map[string]int64 // currency → micro-units
}

func (s *sums) add(tokens int64, cost usage.Money) {
	s.tokens += tokens
	if cost.Known() && cost.Micros != 0 {
		if s.cost == nil {
			s.cost = map[string]int64{}
		}
		s.cost[cost.Currency] += cost.Micros
	}
}

type spend struct {
	tenant   string // what the window's scan reads (set when made, never changed)
	from, to int64

	mu         sync.Mutex
	loaded     bool      // a scan has been merged
	scannedAt  time.Time // when the last scan began
	scanning   bool      // a scan is under way (one at a time per window)
	executions map[string]execSpend
	all        sums
	byProvider map[string]*sums
}

// report merges one execution's cumulative usage.
func (s *spend) report(executionID, provider string, u usage.Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.merge(executionID, provider, u.TotalTokens, u.Cost)
}

// merge takes the larger of the known and the given cumulative value (mu held).
func (s *spend) merge(executionID, provider string, tokens int64, cost usage.Money) {
	prev, ok := s.executions[executionID]
	if ok && tokens <= prev.tokens && cost.Micros <= prev.cost.Micros {
		return
	}
	next := execSpend{provider: provider, tokens: max(tokens, prev.tokens), cost: cost}
	if cost.Micros < prev.cost.Micros {
		next.cost = prev.cost
	}
	dTokens := next.tokens - prev.tokens
	dCost := usage.Money{Micros: next.cost.Micros - prev.cost.Micros, Currency: next.cost.Currency}
	if s.executions == nil {
		s.executions = map[string]execSpend{}
		s.byProvider = map[string]*sums{}
	}
	s.executions[executionID] = next
	s.all.add(dTokens, dCost)
	p := s.byProvider[provider]
	if p == nil {
		p = &sums{}
		s.byProvider[provider] = p
	}
	p.add(dTokens, dCost)
}

func (s *spend) isLoaded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loaded
}

// spent is the tokens (currency "") or the cost in currency spent, by provider ("" = all).
func (s *spend) spent(provider, currency string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	sm := &s.all
	if provider != "" {
		if sm = s.byProvider[provider]; sm == nil {
			return 0
		}
	}
	if currency == "" {
		return sm.tokens
	}
	return sm.cost[currency]
}

// window returns tenant's spend in the window w containing t. Nothing is read here (it runs on
// the store's commit goroutine): a window never read, or read longer ago than Options.Refresh,
// is read from the store in the background, and decides nothing until that read is merged.
func (b *Budgets) window(tenant string, w Window, t time.Time) *spend {
	start, end := w.bounds(t)
	key := windowKey{tenant: tenant, window: w, start: start.UnixMilli()}
	b.mu.Lock()
	s := b.windows[key]
	if s == nil {
		b.forgetEnded(t)
		s = &spend{tenant: tenant, from: start.UnixMilli(), to: end.UnixMilli()}
		b.windows[key] = s
	}
	b.mu.Unlock()

	b.rescan(s, b.opts.Refresh)
	return s
}

// rescan reads s from the store in the background when it was never read, or when its last
// scan is at least every old (0: never again once read) and none is under way.
func (b *Budgets) rescan(s *spend, every time.Duration) {
	now := b.opts.Now()
	s.mu.Lock()
	due := !s.loaded || (every > 0 && now.Sub(s.scannedAt) >= every)
	if !due || s.scanning {
		s.mu.Unlock()
		return
	}
	s.scanning = true
	q := store.UsageQuery{Tenant: s.tenant, FromMs: s.from, ToMs: s.to}
	s.mu.Unlock()
	go b.scan(s, q, now)
}

// scan reads q's rows and merges them into s.
func (b *Budgets) scan(s *spend, q store.UsageQuery, began time.Time) {
	type row struct {
		id, provider string
		tokens       int64
		cost         usage.Money
	}
	var rows []row
	err := b.src.ForEachUsage(q, func(r store.ExecutionUsage) bool {
		u := r.Usage
		rows = append(rows, row{r.ExecutionID, r.ProviderID, u.TotalTokens, u.Cost})
		return true
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scanning = false
	if err != nil {
		return // the next report tries again
	}
	for _, r := range rows {
		s.merge(r.id, r.provider, r.tokens, r.cost)
	}
	s.loaded, s.scannedAt = true, began
}

// forgetEnded drops the windows that ended more than a day before t: nothing counts in them
// any more (b.mu held). A late report of an old execution reads its window again.
func (b *Budgets) forgetEnded(t time.Time) {
	for k := range b.windows {
		_, end := k.window.bounds(time.UnixMilli(k.start))
		if end.Before(t.Add(-24 * time.Hour)) {
			delete(b.windows, k)
		}
	}
}

package caddymodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/harness-edge/harness-edge/backend/budget"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/usage"
)

// Budget is one usage budget (docs/usage.md): the tokens and/or the cost a tenant (or each
// tenant, "*") may spend per UTC day or calendar month, with one provider or all of them, and
// the tenant's own bound on running executions. Caddyfile:
//
//	budget <tenant|*> [<provider>] {
//		tokens      <n> per day|month
//		cost        <amount> <currency> per day|month
//		reserve     <n> | <amount> <currency>
//		max_running <n>
//		on_exceed   cancel|finish
//	}
//
// reserve is what each start reserves of the limit until its execution ends (docs/usage.md
// "Budgets"): tokens, or a cost in the cost limit's currency; it may be given once of each.
type Budget struct {
	Tenant   string `json:"tenant"`
	Provider string `json:"provider,omitempty"`
	Tokens   int64  `json:"tokens,omitempty"`
	// TokensPer is "day" or "month".
	TokensPer string `json:"tokens_per,omitempty"`
	// Cost is a decimal amount ("25", "0.50") in Currency (ISO 4217), per CostPer.
	Cost     string `json:"cost,omitempty"`
	Currency string `json:"currency,omitempty"`
	CostPer  string `json:"cost_per,omitempty"`
	// ReserveTokens and ReserveCost (in Currency) are what each start reserves until its
	// execution ends; unset, the largest usage among the tenant's recent executions on the
	// budget (with none yet, one execution at a time).
	ReserveTokens int64  `json:"reserve_tokens,omitempty"`
	ReserveCost   string `json:"reserve_cost,omitempty"`
	// MaxRunning bounds the tenant's non-terminal executions (its own max_running; a named
	// tenant only, without a provider).
	MaxRunning int `json:"max_running,omitempty"`
	// OnExceed is what happens to an execution that takes the budget to its limit: "cancel"
	// (the default: cancelled, the reason naming the budget) or "finish" (its turn finishes;
	// later starts are refused until the window ends).
	OnExceed string `json:"on_exceed,omitempty"`
}

// parseBudget reads one budget block. Errors name the line (d.Errf).
func (m *Harness) parseBudget(d *caddyfile.Dispenser) error {
	var b Budget
	file, line := d.File(), d.Line()
	// check checks what the block holds so far, so that a bad setting is named on its own line.
	check := func() error {
		if _, err := b.limit(); err != nil && !errors.Is(err, budget.ErrNoLimit) {
			return d.Errf("budget %s: %v", b.Tenant, err)
		}
		return nil
	}
	args := d.RemainingArgs()
	switch len(args) {
	case 1:
		b.Tenant = args[0]
	case 2:
		b.Tenant, b.Provider = args[0], args[1]
	default:
		return d.Err("budget takes a tenant (or * for each tenant) and optionally a provider id: budget <tenant> [<provider>] { … }")
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch setting := d.Val(); setting {
		case "tokens":
			args := d.RemainingArgs()
			if len(args) != 3 || args[1] != "per" {
				return d.Err("tokens <n> per day|month")
			}
			n, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return d.Errf("tokens: %q is not a whole number", args[0])
			}
			b.Tokens, b.TokensPer = n, args[2]
			if err := check(); err != nil {
				return err
			}
		case "cost":
			args := d.RemainingArgs()
			if len(args) != 4 || args[2] != "per" {
				return d.Err("cost <amount> <currency> per day|month, e.g. cost 25.00 USD per month")
			}
			b.Cost, b.Currency, b.CostPer = args[0], args[1], args[3]
			if err := check(); err != nil {
				return err
			}
		case "reserve":
			args := d.RemainingArgs()
			switch len(args) {
			case 1:
				n, err := strconv.ParseInt(args[0], 10, 64)
				if err != nil {
					return d.Errf("reserve: %q is not a whole number of tokens", args[0])
				}
				b.ReserveTokens = n
			case 2:
				if args[1] != b.Currency {
					return d.Errf("reserve %s %s: give the cost limit first, in the same currency", args[0], args[1])
				}
				b.ReserveCost = args[0]
			default:
				return d.Err("reserve <tokens> or reserve <amount> <currency>, e.g. reserve 2000 or reserve 0.50 USD")
			}
			if err := check(); err != nil {
				return err
			}
		case "max_running":
			var raw string
			if !d.AllArgs(&raw) {
				return d.ArgErr()
			}
			n, err := strconv.Atoi(raw)
			if err != nil {
				return d.Errf("max_running: %q is not a whole number", raw)
			}
			b.MaxRunning = n
			if err := check(); err != nil {
				return err
			}
		case "on_exceed":
			if !d.AllArgs(&b.OnExceed) {
				return d.ArgErr()
			}
			if err := check(); err != nil {
				return err
			}
		default:
			return d.Errf("unknown budget setting %q (tokens, cost, reserve, max_running, on_exceed)", setting)
		}
	}
	if _, err := b.limit(); err != nil {
		return fmt.Errorf("%s:%d - Error during parsing: budget %s: %w", file, line, b.Tenant, err)
	}
	m.Budgets = append(m.Budgets, b)
	return nil
}

// limit checks b and converts it for package budget; a budget with max_running alone has no
// usage limit (ok false).
func (b Budget) limit() (l budget.Limit, err error) {
	l = budget.Limit{Tenant: b.Tenant, Provider: b.Provider, Tokens: b.Tokens}
	window := func(name, per string) (budget.Window, error) {
		switch per {
		case "day":
			return budget.Day, nil
		case "month":
			return budget.Month, nil
		}
		return 0, fmt.Errorf("%s must be per day or per month, got %q", name, per)
	}
	if b.Tokens != 0 || b.TokensPer != "" {
		if b.Tokens <= 0 {
			return l, fmt.Errorf("tokens must be a positive number, got %d", b.Tokens)
		}
		if l.TokensWindow, err = window("tokens", b.TokensPer); err != nil {
			return l, err
		}
	}
	if b.Cost != "" || b.Currency != "" || b.CostPer != "" {
		micros, err := usage.ParseAmount(b.Cost)
		if err != nil {
			return l, fmt.Errorf("cost: %w", err)
		}
		if micros <= 0 {
			return l, fmt.Errorf("cost must be more than zero, got %s", b.Cost)
		}
		if err := usage.CheckCurrency(b.Currency); err != nil {
			return l, fmt.Errorf("cost: %w", err)
		}
		l.Cost = usage.Money{Micros: micros, Currency: b.Currency}
		if l.CostWindow, err = window("cost", b.CostPer); err != nil {
			return l, err
		}
	}
	l.ReserveTokens = b.ReserveTokens
	if b.ReserveCost != "" {
		micros, err := usage.ParseAmount(b.ReserveCost)
		if err != nil {
			return l, fmt.Errorf("reserve: %w", err)
		}
		l.ReserveCost = usage.Money{Micros: micros, Currency: b.Currency}
	}
	switch b.OnExceed {
	case "", "cancel":
	case "finish":
		l.Finish = true
	default:
		return l, fmt.Errorf("on_exceed must be cancel or finish, got %q", b.OnExceed)
	}
	switch {
	case b.MaxRunning < 0:
		return l, fmt.Errorf("max_running must be a positive number, got %d", b.MaxRunning)
	case b.MaxRunning > 0 && (b.Provider != "" || b.Tenant == budget.AnyTenant):
		return l, fmt.Errorf("max_running is a named tenant's own bound: give it in a budget without a provider (and use the handler's max_running for every tenant)")
	case b.MaxRunning > 0 && b.Tokens == 0 && b.Cost == "" && b.ReserveTokens == 0 && b.ReserveCost == "":
		return l, nil // a bound on running executions alone
	}
	return l, budget.Check(l)
}

// checkBudgets validates the JSON config's budgets (the Caddyfile's were checked as they were
// read, with their line): `caddy validate` refuses a budget that cannot be met.
func (h *Harness) checkBudgets() error {
	seen := map[[2]string]bool{}
	for i, b := range h.Budgets {
		if _, err := b.limit(); err != nil {
			return fmt.Errorf("budgets[%d] (tenant %q): %w", i, b.Tenant, err)
		}
		key := [2]string{b.Tenant, b.Provider}
		if seen[key] {
			return fmt.Errorf("budgets[%d]: a second budget for tenant %q and provider %q: put both limits in one", i, b.Tenant, b.Provider)
		}
		seen[key] = true
	}
	return nil
}

// budgetLimits are the usage limits of the config's budgets.
func (h *Harness) budgetLimits() []budget.Limit {
	var out []budget.Limit
	for _, b := range h.Budgets {
		if l, err := b.limit(); err == nil && (l.Tokens > 0 || l.Cost.Known()) {
			out = append(out, l)
		}
	}
	return out
}

// tenantMaxRunning is each named tenant's own max_running.
func (h *Harness) tenantMaxRunning() map[string]int {
	var out map[string]int
	for _, b := range h.Budgets {
		if b.MaxRunning > 0 {
			if out == nil {
				out = map[string]int{}
			}
			out[b.Tenant] = b.MaxRunning
		}
	}
	return out
}

// budgetRefresh is how stale another node's spending may be on a shared store: a window's
// spending is read again from the store when its last read is this old.
const budgetRefresh = 2 * time.Second

// budgetSwitch is the runtime's backend.Budgets across reloads: the runtime is opened once per
// store, while each config brings its own budgets. The newest config's limits are the ones in
// force (as with providers); a change of limits starts from the store again, which holds
// everything spent.
type budgetSwitch struct {
	mu      sync.Mutex
	src     store.UsageReader
	refresh time.Duration
	limits  string // the limits in force, as JSON (comparable)
	current *budget.Budgets
	pending []budget.Limit // limits set before the store was open
}

// open gives the switch its store, once the runtime has opened it.
func (s *budgetSwitch) open(src store.UsageReader, shared bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.src = src
	if shared {
		s.refresh = budgetRefresh
	}
	s.rebuild(s.pending)
}

// set makes limits the ones in force.
func (s *budgetSwitch) set(limits []budget.Limit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = limits
	if s.src != nil {
		s.rebuild(limits)
	}
}

func (s *budgetSwitch) rebuild(limits []budget.Limit) {
	raw, _ := json.Marshal(limits)
	if string(raw) == s.limits && s.current != nil {
		return
	}
	s.limits = string(raw)
	s.current = nil
	if len(limits) > 0 {
		s.current, _ = budget.New(limits, s.src, budget.Options{Refresh: s.refresh}) // checked at provision
	}
}

func (s *budgetSwitch) get() *budget.Budgets {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current
}

func (s *budgetSwitch) Admission(tenant, providerID string, at time.Time) []store.BudgetCheck {
	if b := s.get(); b != nil {
		return b.Admission(tenant, providerID, at)
	}
	return nil
}

func (s *budgetSwitch) Refusal(tenant, providerID string, at time.Time, refused *store.AdmissionError) (string, int64, bool) {
	if b := s.get(); b != nil {
		return b.Refusal(tenant, providerID, at, refused)
	}
	return "Budget exceeded: " + refused.Error(), budget.ReservedRetryAfter, false
}

func (s *budgetSwitch) Spent(tenant, providerID, executionID string, createdMs int64, cumulative usage.Usage) (string, bool) {
	if b := s.get(); b != nil {
		return b.Spent(tenant, providerID, executionID, createdMs, cumulative)
	}
	return "", false
}

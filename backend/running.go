package backend

import "sync"

// Each tenant's non-terminal executions started by this process, bounded by Tenant.MaxRunning
// (tenant.go): a start beyond the bound is refused with RATE_LIMITED before it is submitted.
// The bound itself is the store's to keep, over every node (usagedesk.go); these slots only
// refuse early what the store would refuse too.

// tenant is the live execution's owner. It never changes: no view of the record is needed.
func (x *execution) tenant() string { return x.tenantID }

// runningSlots counts each tenant's non-terminal executions started by this process, for
// Tenant.MaxRunning. Executions left unfinished by an earlier process are failed by recovery
// before the runtime serves anything, so nothing else can be running. A slot is free as soon as
// its execution's terminal state is published (a client that saw run.completed may start the
// next one at once), whatever path ended it; finished() drops it from the map as well.
type runningSlots struct {
	mu       sync.Mutex
	byTenant map[string]map[string]*execution // tenant → execution id → execution
}

// acquire takes a slot of tenant t for x, or reports false when t already has t.MaxRunning
// non-terminal executions. Check and take are one step, so concurrent starts never overshoot.
func (s *runningSlots) acquire(t Tenant, x *execution) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := s.byTenant[t.ID]
	if t.MaxRunning > 0 && len(held) >= t.MaxRunning {
		for id, other := range held {
			if other.publishedTerminal() {
				delete(held, id)
			}
		}
		if len(held) >= t.MaxRunning {
			return false
		}
	}
	if held == nil {
		if s.byTenant == nil {
			s.byTenant = make(map[string]map[string]*execution)
		}
		held = make(map[string]*execution)
		s.byTenant[t.ID] = held
	}
	held[x.id] = x
	return true
}

// release frees x's slot; harmless when it was freed before.
func (s *runningSlots) release(tenant, executionID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := s.byTenant[tenant]
	delete(held, executionID)
	if len(held) == 0 {
		delete(s.byTenant, tenant)
	}
}

// running returns how many slots tenant holds (tests).
func (s *runningSlots) running(tenant string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byTenant[tenant])
}

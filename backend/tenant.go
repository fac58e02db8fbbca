package backend

import (
	"context"
	"sync"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Tenancy. A tenant is whoever owns a conversation and the executions started in it. The caller
// names it per request through the context (WithTenant); the HTTP edge takes it from the
// authenticated identity. Every conversation and execution record keeps the tenant that created
// it (a field of the record, so any store keeps it the way it keeps the rest of the record), and
// every lookup by id answers another tenant's object exactly as it answers an unknown id:
// NOT_FOUND with the reference's message, after the same reads. A context without a tenant is
// the anonymous tenant "", which owns what was created without one (tenancy off) and nothing
// else: a caller that forgot to name its tenant sees nobody's objects.

// Tenant is the caller's tenant and its limits.
type Tenant struct {
	// ID names the tenant; "" is the anonymous tenant.
	ID string
	// MaxRunning bounds how many of the tenant's executions may be non-terminal at once; a
	// start beyond it is refused with RATE_LIMITED. 0 means no bound.
	MaxRunning int
}

type tenantContextKey struct{}

// WithTenant returns a context whose runtime calls act as tenant t.
func WithTenant(ctx context.Context, t Tenant) context.Context {
	return context.WithValue(ctx, tenantContextKey{}, t)
}

// TenantFrom returns the tenant ctx acts as: the zero Tenant (anonymous, unbounded) when none
// was set.
func TenantFrom(ctx context.Context) Tenant {
	t, _ := ctx.Value(tenantContextKey{}).(Tenant)
	return t
}

// CodeRateLimited refuses a start while the tenant already has Tenant.MaxRunning non-terminal
// executions (an addition to the reference's codes; HTTP 429 with Retry-After).
const CodeRateLimited = api.ErrorCodeRATELIMITED

const msgTooManyRunning = "Too many executions running at once (at most %d); retry when one has finished"

func errTooManyRunning(limit int) *Error {
	return newError(CodeRateLimited, msgTooManyRunning, limit)
}

// tenant is the live execution's owner. It never changes, so the published record's copy is
// as good as the writers'.
func (x *execution) tenant() string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.rec.Tenant
}

// publishedTerminal reports whether readers can already see x in a terminal state.
func (x *execution) publishedTerminal() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return isTerminalState(x.rec.Execution.State)
}

// conversationFor reads conversation id as the caller's tenant sees it; another tenant's
// conversation is NOT_FOUND after the same one store read an unknown id costs.
func (r *Runtime) conversationFor(ctx context.Context, id string) (store.Conversation, error) {
	c, found, err := r.store.Conversation(id)
	if err != nil {
		return store.Conversation{}, internalError("read conversation", err)
	}
	if !found {
		return store.Conversation{}, errConversationNotFound(id)
	}
	r.conversations.add(id, c.Tenant)
	if c.Tenant != TenantFrom(ctx).ID {
		return store.Conversation{}, errConversationNotFound(id)
	}
	return c, nil
}

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

package backend

import (
	"context"

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
	// MaxRunning bounds how many of the tenant's executions may be non-terminal at once, on
	// every node sharing the store together (the store decides it in the start's commit,
	// usagedesk.go); a start beyond it is refused with RATE_LIMITED. 0 means no bound.
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

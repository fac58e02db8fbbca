package streams

import (
	"slices"
	"strings"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Filter says which entries a stream sends. Tenant is always applied — it is the caller's, never
// a client's choice — and every other field only narrows: no filter can widen what a tenant sees.
type Filter struct {
	Tenant string
	// ConversationID: a conversation's stream, or the tenant stream narrowed to one.
	ConversationID string
	// Providers and Types, when not empty, keep only entries of those providers and types.
	Providers []string
	Types     []api.StandardEventType
	// LifecycleOnly keeps only run.* and action.* events (Lifecycle): starts, answers and
	// terminals, without text deltas, artifacts or provider events.
	LifecycleOnly bool
}

// Lifecycle reports whether t is a lifecycle event: run.* and action.*.
func Lifecycle(t api.StandardEventType) bool {
	return strings.HasPrefix(string(t), "run.") || strings.HasPrefix(string(t), "action.")
}

// matches reports whether e passes the filter (the tenant included).
func (f *Filter) matches(e *store.LogEntry) bool {
	if e.Scope.Tenant != f.Tenant {
		return false
	}
	if f.ConversationID != "" && e.Scope.ConversationID != f.ConversationID {
		return false
	}
	return f.narrows(e)
}

// narrows applies the filters beside the scope (the store applies tenant and conversation).
func (f *Filter) narrows(e *store.LogEntry) bool {
	if e.Erased != nil {
		return true // an erasure's marker reaches every stream of its scope, whatever it narrows to
	}
	if f.LifecycleOnly && !Lifecycle(e.Event.Type) {
		return false
	}
	if len(f.Types) > 0 && !slices.Contains(f.Types, e.Event.Type) {
		return false
	}
	if len(f.Providers) > 0 && !slices.Contains(f.Providers, e.Scope.ProviderID) {
		return false
	}
	return true
}

// query is the store read of the filter after a position.
func (f *Filter) query(after int64, limit int) store.LogQuery {
	q := store.LogQuery{After: after, Tenant: f.Tenant, ConversationID: f.ConversationID, Limit: limit}
	if f.LifecycleOnly || len(f.Types) > 0 || len(f.Providers) > 0 {
		q.Match = f.narrows
	}
	return q
}

// topic is the wake-up channel a subscription waits on: the narrowest of its filter's scopes
// that an append can name without looking at the subscription.
type topic struct {
	kind byte
	key  string
}

const (
	topicConversation    = 'c' // key: the conversation id
	topicTenant          = 't' // key: the tenant
	topicTenantLifecycle = 'l' // key: the tenant; lifecycle entries only
)

func (f *Filter) topic() topic {
	switch {
	case f.ConversationID != "":
		return topic{kind: topicConversation, key: f.ConversationID}
	case f.LifecycleOnly || len(f.Types) > 0 && !slices.ContainsFunc(f.Types, func(t api.StandardEventType) bool { return !Lifecycle(t) }):
		return topic{kind: topicTenantLifecycle, key: f.Tenant}
	default:
		return topic{kind: topicTenant, key: f.Tenant}
	}
}

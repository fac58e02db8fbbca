package store

import (
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// What a store keeps for approvals (docs/protocol.md, "Approvals"): the inbox (the pending
// actions of a tenant, oldest first), the deadlines of actions that expire, and standing
// rules. The first two are indexes over the action records a Batch already writes
// (Batch.Actions): a store maintains them in the transaction that puts the record, so an action
// leaves the inbox and its deadline in the commit that answers or abandons it. Rules are
// records of their own (Batch.Rules).

// ActionRecords is the approvals part of the store contract.
type ActionRecords interface {
	// PendingActions returns at most q.Limit pending actions of q.Tenant, oldest first
	// (ActionPositionOf order), after q.After, and the position to continue from when more may
	// follow (nil on the last page). A record that cannot be decoded is skipped and handed to
	// q.Undecodable.
	PendingActions(q ActionQuery) ([]Action, *ListPosition, error)
	// DueActions returns at most limit pending actions whose ExpiresAt is at or before now,
	// earliest first, and the earliest ExpiresAt of the others (zero: none; at or before now
	// when limit left due ones out).
	DueActions(now time.Time, limit int) (due []Action, next time.Time, err error)
	// Rule is the standing rule id, revoked or not.
	Rule(id string) (Rule, bool, error)
	// Rules returns tenant's standing rules, revoked ones included, oldest first (CreatedAt,
	// then id): with conversationID, that conversation's and the tenant-wide ones; without,
	// all of them.
	Rules(tenant, conversationID string) ([]Rule, error)
}

// ActionQuery is a validated inbox request, as a store reads it.
type ActionQuery struct {
	Tenant         string        // only this tenant's actions ("" = anonymous)
	ProviderID     string        // "": every provider
	ConversationID string        // "": every conversation
	After          *ListPosition // nil: from the oldest
	Limit          int           // >= 1
	// Undecodable, when set, is told of each record the walk skips (see ListQuery).
	Undecodable func(id string, err error)
}

// Matches reports whether a (pending) action belongs to q's page: its tenant and filters.
func (q ActionQuery) Matches(a Action) bool {
	return a.Status == ActionPending && a.Tenant == q.Tenant &&
		(q.ProviderID == "" || a.ProviderID == q.ProviderID) &&
		(q.ConversationID == "" || a.ConversationID == q.ConversationID)
}

// ActionPositionOf is a's place in the inbox order: its creation time, then its id.
func ActionPositionOf(a Action) ListPosition {
	return positionAt(a.Request.CreatedAt, a.Request.ID)
}

// ExpiresAt is when a pending action expires, zero when it does not.
func (a Action) ExpiresAt() time.Time {
	if a.Request.ExpiresAt == nil {
		return time.Time{}
	}
	t, err := time.Parse(timestampLayout, *a.Request.ExpiresAt)
	if err != nil {
		return time.Time{}
	}
	return t
}

// Rule is the durable form of a standing rule: the wire object and the tenant that owns it.
// A revocation rewrites it with RevokedAt set; it is never deleted, so an answer that names it
// stays explained.
type Rule struct {
	api.ActionRule
	Tenant string `json:"tenant,omitempty"`
}

// RulePositionOf orders rules: creation time, then id.
func RulePositionOf(r Rule) ListPosition { return positionAt(r.CreatedAt, r.ID) }

func positionAt(timestamp, id string) ListPosition {
	var ms uint64
	if t, err := time.Parse(timestampLayout, timestamp); err == nil && t.UnixMilli() > 0 {
		ms = uint64(t.UnixMilli())
	}
	return ListPosition{CreatedMs: ms, ID: id}
}

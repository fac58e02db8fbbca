package backend

import (
	"context"

	"github.com/harness-edge/harness-edge/backend/approvals"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// ApprovalDesk is the inbox and the standing rules of a runtime, as its callers see them
// (docs/protocol.md, "Approvals"): every operation acts for the context's tenant (WithTenant)
// and never shows another tenant's actions or rules. The HTTP binding serves it under
// /v1/actions and /v1/action-rules. It owns what answers actions besides people: the
// configured rules (approvaloptions.go) and the expiry of actions past their deadline; an
// execution asks it which rule answers an action about to open (standingrules.go).
type ApprovalDesk struct {
	store         store.Store
	open          func() error               // Runtime.checkOpen: ErrClosed once the runtime closed
	conversations *conversationDesk          // a rule's conversation is its tenant's
	knownProvider func(id string) bool       // a rule names registered providers only
	undecodable   func(id string, err error) // reports damaged records the inbox passes over
	configured    []configuredRule           // the standing rules of the configuration
	expiry        *approvals.Expiry          // started by Open once executions resumed (expiryhost.go)
}

// ActionFilter selects the pending actions Pending returns; the zero value is the oldest
// DefaultListLimit of every provider and conversation.
type ActionFilter struct {
	ProviderID     string
	ConversationID string
	// After is the NextCursor of the previous page; "" starts at the oldest.
	After string
	// Limit is 0 (DefaultListLimit) or 1–MaxListLimit.
	Limit int
}

// ActionPage is one page of the inbox.
type ActionPage struct {
	Actions    []api.ListedAction
	NextCursor string // "" on the last page
}

// Pending lists the tenant's pending actions, oldest first. The errors are the listing's
// (ErrListLimit, ErrListAfter).
func (a *ApprovalDesk) Pending(ctx context.Context, f ActionFilter) (ActionPage, error) {
	if err := a.ready(ctx); err != nil {
		return ActionPage{}, err
	}
	q := store.ActionQuery{Tenant: TenantFrom(ctx).ID, ProviderID: f.ProviderID, ConversationID: f.ConversationID,
		Limit: f.Limit, Undecodable: a.undecodable}
	if q.Limit == 0 {
		q.Limit = DefaultListLimit
	}
	if q.Limit < 1 || q.Limit > MaxListLimit {
		return ActionPage{}, ErrListLimit
	}
	if f.After != "" {
		pos, ok := parseListCursor(f.After)
		if !ok {
			return ActionPage{}, ErrListAfter
		}
		q.After = &pos
	}
	recs, next, err := a.store.PendingActions(q)
	if err != nil {
		return ActionPage{}, internalError("list pending actions", err)
	}
	page := ActionPage{Actions: make([]api.ListedAction, len(recs))}
	for i, rec := range recs {
		page.Actions[i] = api.ListedAction{Action: rec.Request, ConversationID: rec.ConversationID, ProviderID: rec.ProviderID}
	}
	if next != nil {
		page.NextCursor = listCursor(*next)
	}
	return page, nil
}

// Rules lists the tenant's rules, oldest first: with conversationID only those that apply to
// it (an unknown conversation is NOT_FOUND); with activeOnly without the revoked ones.
func (a *ApprovalDesk) Rules(ctx context.Context, conversationID string, activeOnly bool) ([]api.ActionRule, error) {
	if err := a.ready(ctx); err != nil {
		return nil, err
	}
	if conversationID != "" {
		if _, err := a.conversations.GetConversation(ctx, conversationID); err != nil {
			return nil, err
		}
	}
	rules, err := a.rulesFor(TenantFrom(ctx).ID, conversationID)
	if err != nil {
		return nil, internalError("list rules", err)
	}
	out := make([]api.ActionRule, 0, len(rules))
	for _, r := range rules {
		if !activeOnly || r.RevokedAt == nil {
			out = append(out, r.ActionRule)
		}
	}
	return out, nil
}

// Rule is the tenant's rule id, revoked or not.
func (a *ApprovalDesk) Rule(ctx context.Context, id string) (api.ActionRule, error) {
	if err := a.ready(ctx); err != nil {
		return api.ActionRule{}, err
	}
	r, err := a.find(ctx, id)
	return r.ActionRule, err
}

func (a *ApprovalDesk) find(ctx context.Context, id string) (store.Rule, error) {
	tenant := TenantFrom(ctx).ID
	for _, c := range configuredFor(a.configured, tenant) {
		if c.ID == id {
			return c, nil
		}
	}
	r, found, err := a.store.Rule(id)
	if err != nil {
		return store.Rule{}, internalError("read rule", err)
	}
	if !found || r.Tenant != tenant {
		return store.Rule{}, errRuleNotFound(id)
	}
	return r, nil
}

func errRuleNotFound(id string) *Error { return newError(CodeNotFound, "Rule not found: %s", id) }

// msgInvalidRule is the message of a createActionRule body the API refuses.
const msgInvalidRule = "Invalid action rule"

// CreateRule puts a standing rule in force for the tenant (or one of its conversations), made
// by the context's actor. It answers approvals opened from now on.
func (a *ApprovalDesk) CreateRule(ctx context.Context, in api.CreateActionRuleRequest) (api.ActionRule, error) {
	if err := a.ready(ctx); err != nil {
		return api.ActionRule{}, err
	}
	if err := approvals.CheckRule(in, a.knownProvider); err != nil {
		return api.ActionRule{}, validationError(msgInvalidRule, err)
	}
	scope := api.ActionRuleScopeTenant
	if in.ConversationID != nil {
		if _, err := a.conversations.GetConversation(ctx, *in.ConversationID); err != nil {
			return api.ActionRule{}, err
		}
		scope = api.ActionRuleScopeConversation
	}
	rule := store.Rule{
		ActionRule: api.ActionRule{
			ID: newID(ruleIDPrefix), Scope: scope, ConversationID: clonePtr(in.ConversationID),
			Match: in.Match, Decision: in.Decision, Message: clonePtr(in.Message),
			Source: api.ActionRuleSourceAPI, CreatedAt: now(), CreatedBy: ActorFrom(ctx),
		},
		Tenant: TenantFrom(ctx).ID,
	}
	if err := a.store.Commit(&store.Batch{Rules: []store.Rule{rule}}); err != nil {
		return api.ActionRule{}, storeError("commit rule", err)
	}
	return rule.ActionRule, nil
}

// RevokeRule ends a rule: it answers nothing from now on, and stays readable with revokedAt.
// A revoked rule is returned as it is; a configured one cannot be revoked (INVALID_STATE).
func (a *ApprovalDesk) RevokeRule(ctx context.Context, id string) (api.ActionRule, error) {
	if err := a.ready(ctx); err != nil {
		return api.ActionRule{}, err
	}
	r, err := a.find(ctx, id)
	if err != nil {
		return api.ActionRule{}, err
	}
	if r.Source == api.ActionRuleSourceConfig {
		return api.ActionRule{}, newError(CodeInvalidState, "Rule %s is part of the server's configuration: remove it there", id)
	}
	if r.RevokedAt != nil {
		return r.ActionRule, nil
	}
	at := now()
	r.RevokedAt, r.RevokedBy = &at, ActorFrom(ctx)
	if err := a.store.Commit(&store.Batch{Rules: []store.Rule{r}}); err != nil {
		return api.ActionRule{}, storeError("commit rule", err)
	}
	return r.ActionRule, nil
}

func (a *ApprovalDesk) ready(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return a.open()
}

// rulesFor is every rule that may apply to tenant's actions in conversationID (all of tenant's
// when it is ""): the stored ones and the configured ones, revoked ones included.
func (a *ApprovalDesk) rulesFor(tenant, conversationID string) ([]store.Rule, error) {
	stored, err := a.store.Rules(tenant, conversationID)
	if err != nil {
		return nil, err
	}
	return append(stored, configuredFor(a.configured, tenant)...), nil
}

// wakeExpiry tells the loop a new deadline may be nearer than its sleep.
func (a *ApprovalDesk) wakeExpiry() {
	if a.expiry != nil {
		a.expiry.Wake()
	}
}

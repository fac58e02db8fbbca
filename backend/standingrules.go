package backend

import (
	"github.com/harness-edge/harness-edge/backend/approvals"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// An execution's side of standing rules (package approvals decides; docs/protocol.md, "Standing
// rules"; the rules are the ApprovalDesk's): which rule answers an action about to open, and
// the rule an *_always answer leaves.

// standingRule is the rule that answers in at once, or nil. It reads the store without any
// lock of the execution (openAction takes it after). A store that cannot answer leaves the
// action to people: failing closed here means asking, not approving.
func (x *execution) standingRule(in ActionInput) *store.Rule {
	if in.Kind != api.ActionKindApproval {
		return nil
	}
	rules, err := x.rt.approvals.rulesFor(x.tenant(), x.conversationID)
	if err != nil {
		x.rt.log.Warn("read the standing rules; the action waits for an answer", "execution", x.id, "err", err)
		return nil
	}
	return approvals.Choose(approvals.Precedence(rules), approvals.Subject{
		ProviderID: x.providerID, Kind: in.Kind, Title: in.Title, ToolKind: in.ToolKind,
	})
}

// rememberedRule is the conversation rule an answer asks for by choosing an allow_always or
// reject_always option (zero when it chose none): it matches the same provider, tool kind and
// exact title, so the same question in a later turn is answered the same way without anyone.
func (x *execution) rememberedRule(req api.ActionRequest, answer api.ActionResponse, actor *api.Actor, at api.Timestamp) store.Rule {
	option, ok := approvals.ChosenOption(req, answer)
	if !ok || req.Kind != api.ActionKindApproval {
		return store.Rule{}
	}
	decision, ok := approvals.Remembers(option)
	if !ok {
		return store.Rule{}
	}
	match := api.ActionRuleMatch{ProviderID: ptr(x.providerID), Title: ptr(approvals.ExactTitle(req.Title)), ToolKind: clonePtr(req.ToolKind)}
	return store.Rule{
		ActionRule: api.ActionRule{
			ID: newID(ruleIDPrefix), Scope: api.ActionRuleScopeConversation, ConversationID: ptr(x.conversationID),
			Match: match, Decision: decision, Message: clonePtr(answer.Message),
			Source: api.ActionRuleSourceAnswer, ActionID: ptr(req.ID), CreatedAt: at, CreatedBy: actor,
		},
		Tenant: x.tenantID,
	}
}

package proxy

import (
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The approvals extension's routes (docs/protocol.md, "Approvals"): the inbox
// (GET /v1/actions) and the standing rules (/v1/action-rules), served from the runtime's
// Approvals; and the start's actionTimeoutSeconds member.

const (
	msgInvalidRule     = "Invalid action rule"
	msgInboxState      = "state must be pending"
	msgInvalidActive   = "active must be true or false"
	maxActionTimeoutS  = int(backend.MaxActionTimeout / 1e9)
	revokeSuffix       = ":revoke"
	reasonRuleBodyNone = "takes no body"
)

// listActions serves GET /v1/actions: the tenant's pending actions, oldest first.
func (h *Handler) listActions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.RawQuery
	var f backend.ActionFilter
	state, _, ok := queryParam(q, "state")
	if !ok || (state != "" && state != "pending") {
		h.writeError(w, r, invalidParameter(msgInboxState, "state", "only pending actions are listed"))
		return
	}
	for _, p := range []struct {
		name string
		into *string
	}{{"providerId", &f.ProviderID}, {"conversationId", &f.ConversationID}, {"after", &f.After}} {
		v, _, ok := queryParam(q, p.name)
		if !ok {
			h.writeError(w, r, invalidParameter("Invalid "+p.name, p.name, "cannot be unescaped"))
			return
		}
		*p.into = v
	}
	limit, _, ok := queryParam(q, "limit")
	if !ok {
		h.writeError(w, r, invalidListParameter("limit", ""))
		return
	}
	if limit != "" {
		n, ok := parseLimit(limit)
		if !ok || n > backend.MaxListLimit {
			h.writeError(w, r, invalidListParameter("limit", ""))
			return
		}
		f.Limit = n
	}
	page, err := h.rt.Approvals().Pending(r.Context(), f)
	switch {
	case errors.Is(err, backend.ErrListAfter):
		err = invalidListParameter("after", "")
	case errors.Is(err, backend.ErrListLimit):
		err = invalidListParameter("limit", "")
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	list := api.ActionList{Actions: page.Actions}
	if list.Actions == nil {
		list.Actions = []api.ListedAction{}
	}
	if page.NextCursor != "" {
		list.NextCursor = &page.NextCursor
	}
	writeJSON(w, http.StatusOK, list)
}

// listActionRules serves GET /v1/action-rules.
func (h *Handler) listActionRules(w http.ResponseWriter, r *http.Request) {
	conversationID, _, ok := queryParam(r.URL.RawQuery, "conversationId")
	if !ok {
		h.writeError(w, r, invalidParameter("Invalid conversationId", "conversationId", "cannot be unescaped"))
		return
	}
	active, _, ok := queryParam(r.URL.RawQuery, "active")
	if !ok || (active != "" && active != "true" && active != "false") {
		h.writeError(w, r, invalidParameter(msgInvalidActive, "active", "must be true or false"))
		return
	}
	rules, err := h.rt.Approvals().Rules(r.Context(), conversationID, active == "true")
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ActionRuleList{Rules: rules})
}

// createActionRule serves POST /v1/action-rules.
func (h *Handler) createActionRule(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, h.opts.MaxBodyBytes)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	in, err := decodeRuleRequest(body)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	rule, err := h.rt.Approvals().CreateRule(r.Context(), in)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, rule)
}

// getActionRule serves GET /v1/action-rules/{id}.
func (h *Handler) getActionRule(w http.ResponseWriter, r *http.Request, id string) {
	rule, err := h.rt.Approvals().Rule(r.Context(), id)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rule)
}

// revokeActionRule serves POST /v1/action-rules/{id}:revoke; its body is absent or {}.
func (h *Handler) revokeActionRule(w http.ResponseWriter, r *http.Request, id string) {
	body, err := readBody(w, r, h.opts.MaxBodyBytes)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	m, err := decodeObjectBody(body, false, msgInvalidRule)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if len(m) > 0 {
		h.writeError(w, r, invalidBodyField(msgInvalidRule, "", reasonRuleBodyNone))
		return
	}
	rule, err := h.rt.Approvals().RevokeRule(r.Context(), id)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rule)
}

// decodeRuleRequest decodes a CreateActionRuleRequest strictly: like an answer, a rule with a
// member the API does not know is refused rather than taken for a broader one.
func decodeRuleRequest(body []byte) (api.CreateActionRuleRequest, error) {
	var in api.CreateActionRuleRequest
	m, err := decodeObjectBody(body, true, msgInvalidRule)
	if err != nil {
		return in, err
	}
	invalid := func(pointer, reason string) error { return invalidBodyField(msgInvalidRule, pointer, reason) }
	if err := onlyMembers(m, "", "conversationId", "match", "decision", "message"); err != nil {
		return in, err
	}
	if raw, present := m["conversationId"]; present {
		id, ok := stringValue(raw)
		if !ok || id == "" {
			return in, invalid("/conversationId", reasonNonEmptyString)
		}
		if hasNUL(id) {
			return in, invalid("/conversationId", reasonNUL)
		}
		in.ConversationID = &id
	}
	raw, present := m["match"]
	if !present || len(raw) == 0 || raw[0] != '{' {
		return in, invalid("/match", "required, and must be an object naming a toolKind or a title")
	}
	match := members{}
	scanValidMembers(raw, func(key string, v []byte) { match[key] = v })
	if err := onlyMembers(match, "/match", "providerId", "toolKind", "title"); err != nil {
		return in, err
	}
	for _, f := range []struct {
		name string
		into **string
	}{{"providerId", &in.Match.ProviderID}, {"toolKind", &in.Match.ToolKind}, {"title", &in.Match.Title}} {
		if v, present := match[f.name]; present {
			s, ok := stringValue(v)
			if !ok || s == "" {
				return in, invalid("/match/"+f.name, reasonNonEmptyString)
			}
			if hasNUL(s) {
				return in, invalid("/match/"+f.name, reasonNUL)
			}
			*f.into = &s
		}
	}
	decision, ok := requiredString(m, "decision")
	if !ok {
		return in, invalid("/decision", "required: approve or reject")
	}
	in.Decision = api.RuleDecision(decision)
	if raw, present := m["message"]; present {
		text, ok := stringValue(raw)
		if !ok {
			return in, invalid("/message", "must be a string")
		}
		in.Message = &text
	}
	return in, nil
}

// onlyMembers refuses the first member of m (by name) that is not one of names; prefix is the
// pointer of m in the body.
func onlyMembers(m members, prefix string, names ...string) error {
	var unknown []string
	for key := range m {
		if !slices.Contains(names, key) {
			unknown = append(unknown, key)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	reason := "is not a member here (" + joinNames(names) + ")"
	return invalidBodyFieldSuggesting(msgInvalidRule, prefix+"/"+pointerToken(unknown[0]), reason, closestName(unknown[0], names))
}

// actionTimeoutMember decodes the start's optional actionTimeoutSeconds: a whole number of
// seconds from 1 to 30 days (an expiry in the past, or years away, is a mistake).
func actionTimeoutMember(m members) (*int, error) {
	raw, present := m["actionTimeoutSeconds"]
	if !present {
		return nil, nil
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return checkedActionTimeout(f, err == nil && len(raw) > 0 && raw[0] != '"')
}

func checkedActionTimeout(f float64, isNumber bool) (*int, error) {
	if !isNumber || f != math.Trunc(f) || f < 1 || f > float64(maxActionTimeoutS) {
		return nil, invalidBodyField(msgInvalidExecution, "/actionTimeoutSeconds",
			"must be a whole number of seconds from 1 to "+strconv.Itoa(maxActionTimeoutS)+" (30 days)")
	}
	n := int(f)
	return &n, nil
}

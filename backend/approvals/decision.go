package approvals

import (
	"slices"
	"strings"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Decisions is what an answer to an action of kind may decide when the action does not list
// its own: an approval is approved or rejected (and edited, when it has arguments to change);
// an input is answered or declined.
func Decisions(kind api.ActionKind, hasArguments bool) []api.Decision {
	if kind == api.ActionKindInput {
		return []api.Decision{api.DecisionRespond, api.DecisionReject}
	}
	if hasArguments {
		return []api.Decision{api.DecisionApprove, api.DecisionReject, api.DecisionEdit}
	}
	return []api.Decision{api.DecisionApprove, api.DecisionReject}
}

func decisionsOf(req api.ActionRequest) []api.Decision {
	if req.Decisions != nil {
		return *req.Decisions
	}
	return Decisions(req.Kind, req.Arguments != nil)
}

// Check returns resp as the provider gets it, or why it does not fit req. A portable answer
// ({approved}, {value}, {}) always fits, as in the reference, and gains the decision it implies
// (approved:true on an approval is approve, false is reject; a value on an input is respond,
// approved:false declines it; {} decides nothing). What the extension adds is checked:
//
//   - decision must be one of the action's decisions; approved, when sent too, must agree;
//   - edit needs arguments, an object with every member of the action's arguments, each of the
//     same JSON type (members may be added); arguments alone mean edit;
//   - respond needs a value and takes no message (its value is the answer);
//   - optionId must be one of the action's options: an allow_* option approves (or edits), a
//     reject_* one rejects, and either implies its decision when none is named.
//
// The answer the provider gets always has Decision when one was decided, and Approved set as
// the decision says (approve and edit true, reject false), so a provider that reads only
// approved keeps working.
func Check(req api.ActionRequest, resp api.ActionResponse) (api.ActionResponse, error) {
	out := resp
	if out.Decision == nil && out.Arguments != nil {
		edit := api.DecisionEdit
		out.Decision = &edit
	}
	var option *api.ActionOption
	if out.OptionID != nil {
		o, err := findOption(req, *out.OptionID)
		if err != nil {
			return resp, err
		}
		option = o
		if out.Decision == nil {
			d := api.DecisionApprove
			if !allows(o.Kind) {
				d = api.DecisionReject
			}
			out.Decision = &d
		}
	}
	if out.Decision == nil {
		out.Decision = impliedDecision(req.Kind, out)
		return out, nil // a portable answer: nothing to refuse
	}
	d := *out.Decision
	allowed := decisionsOf(req)
	if !slices.Contains(allowed, d) {
		return resp, invalid("/decision", "this %s action can take %s, not %s", req.Kind, listOf(allowed), d)
	}
	if option != nil {
		if approving := d == api.DecisionApprove || d == api.DecisionEdit; approving != allows(option.Kind) || d == api.DecisionRespond {
			return resp, invalid("/optionId", "option %s is %s, which does not go with decision %s", option.OptionID, option.Kind, d)
		}
	}
	if out.Arguments != nil && d != api.DecisionEdit {
		return resp, invalid("/arguments", "only an edit changes arguments, not decision %s", d)
	}
	switch d {
	case api.DecisionApprove, api.DecisionEdit:
		if out.Approved != nil && !*out.Approved {
			return resp, invalid("/approved", "false contradicts decision %s", d)
		}
		if d == api.DecisionEdit {
			if out.Arguments == nil {
				return resp, invalid("/arguments", "an edit needs the changed arguments: the action's arguments object with the changes made")
			}
			if err := checkArguments(*req.Arguments, *out.Arguments); err != nil {
				return resp, err
			}
		}
		out.Approved = ptr(true)
	case api.DecisionReject:
		if out.Approved != nil && *out.Approved {
			return resp, invalid("/approved", "true contradicts decision reject")
		}
		out.Approved = ptr(false)
	case api.DecisionRespond:
		if out.Value == nil {
			return resp, invalid("/value", "respond needs the value that answers the input")
		}
		if out.Approved != nil && !*out.Approved {
			return resp, invalid("/approved", "false contradicts decision respond (decline with decision reject)")
		}
		if out.Message != nil {
			return resp, invalid("/message", "respond's answer is its value; a message goes with approve, reject or edit")
		}
	}
	return out, nil
}

// impliedDecision is the decision of a portable answer, nil when it implies none.
func impliedDecision(kind api.ActionKind, resp api.ActionResponse) *api.Decision {
	var d api.Decision
	switch {
	case kind == api.ActionKindApproval && resp.Approved != nil && *resp.Approved:
		d = api.DecisionApprove
	case resp.Approved != nil && !*resp.Approved:
		d = api.DecisionReject
	case kind == api.ActionKindInput && resp.Value != nil:
		d = api.DecisionRespond
	default:
		return nil
	}
	return &d
}

func findOption(req api.ActionRequest, id string) (*api.ActionOption, error) {
	if req.Options == nil || len(*req.Options) == 0 {
		return nil, invalid("/optionId", "this action offers no options to choose from")
	}
	ids := make([]string, 0, len(*req.Options))
	for i, o := range *req.Options {
		if o.OptionID == id {
			return &(*req.Options)[i], nil
		}
		ids = append(ids, o.OptionID)
	}
	err := invalid("/optionId", "%q is not one of this action's options: %s", id, strings.Join(ids, ", "))
	err.Suggestion = Closest(id, ids)
	return nil, err
}

func allows(kind api.ActionOptionKind) bool {
	return kind == api.ActionOptionKindAllowOnce || kind == api.ActionOptionKindAllowAlways
}

// Remembers reports whether an answer that chose option o asks for a standing rule, and which
// decision the rule gives: allow_always approves, reject_always rejects from now on.
func Remembers(o api.ActionOption) (api.RuleDecision, bool) {
	switch o.Kind {
	case api.ActionOptionKindAllowAlways:
		return api.RuleDecisionApprove, true
	case api.ActionOptionKindRejectAlways:
		return api.RuleDecisionReject, true
	}
	return "", false
}

// ChosenOption is the option of req that resp names, if any.
func ChosenOption(req api.ActionRequest, resp api.ActionResponse) (api.ActionOption, bool) {
	if resp.OptionID == nil || req.Options == nil {
		return api.ActionOption{}, false
	}
	for _, o := range *req.Options {
		if o.OptionID == *resp.OptionID {
			return o, true
		}
	}
	return api.ActionOption{}, false
}

// checkArguments: an edit sends the whole arguments object, changed; a member the action's
// arguments have must be there with the same JSON type.
func checkArguments(original, edited api.JSONObject) error {
	keys := make([]string, 0, len(original))
	for k := range original {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, ok := edited[k]
		if !ok {
			return invalid("/arguments", "lacks %q, which the action's arguments have: an edit sends the whole arguments object, changed", k)
		}
		if want, got := jsonType(original[k]), jsonType(v); want != got {
			return invalid("/arguments/"+pointerToken(k), "must be %s, as in the action's arguments (not %s)", want, got)
		}
	}
	return nil
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	default:
		return "a number"
	}
}

// pointerToken escapes a member name for a JSON Pointer (RFC 6901).
func pointerToken(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

func listOf(ds []api.Decision) string {
	names := make([]string, len(ds))
	for i, d := range ds {
		names[i] = string(d)
	}
	switch len(names) {
	case 0:
		return "no decision"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func ptr[T any](v T) *T { return &v }

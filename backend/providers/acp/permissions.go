package acp

import (
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

const defaultPermissionTitle = "ACP permission request"

// permissionTitle is the tool call's title, or a fixed one: an action title must not be empty.
func permissionTitle(toolCall acpsdk.ToolCallUpdate) string {
	if toolCall.Title != nil && strings.TrimSpace(*toolCall.Title) != "" {
		return *toolCall.Title
	}
	return defaultPermissionTitle
}

// permissionPayload is the reference's action payload: the tool call id and the agent's options,
// which the caller names in its answer (value: "<optionId>" or value: {optionId}).
func permissionPayload(request acpsdk.RequestPermissionRequest) api.JSONObject {
	options := make([]any, 0, len(request.Options))
	for _, option := range request.Options {
		options = append(options, api.JSONObject{
			"optionId": string(option.OptionId),
			"name":     option.Name,
			"kind":     string(option.Kind),
		})
	}
	return api.JSONObject{
		"toolCallId": string(request.ToolCall.ToolCallId),
		"options":    options,
	}
}

// permissionAction is the approval a permission request becomes: the reference's title and
// payload, and what harness-edge adds (docs/acp.md, "Answers"): the agent's options as it sent
// them, the tool call's input as the arguments an edit changes (when it is an object), and the
// tool's kind, which standing rules match on.
func permissionAction(request acpsdk.RequestPermissionRequest) backend.ActionInput {
	in := backend.ActionInput{
		Kind:    api.ActionKindApproval,
		Title:   permissionTitle(request.ToolCall),
		Payload: permissionPayload(request),
	}
	for _, option := range request.Options {
		in.Options = append(in.Options, api.ActionOption{
			OptionID: string(option.OptionId), Name: option.Name, Kind: api.ActionOptionKind(option.Kind),
		})
	}
	if args, ok := request.ToolCall.RawInput.(map[string]any); ok {
		in.Arguments = args
	}
	if request.ToolCall.Kind != nil {
		in.ToolKind = string(*request.ToolCall.Kind)
	}
	return in
}

// metaAnswer is the _meta key under which the agent gets what an answer said beyond the option
// it chose: the message (a reject's reason, an approval's note) and an edit's changed input.
// ACP's _meta is where implementations attach what the protocol has no field for.
const metaAnswer = "harness-edge/answer"

// permissionResponse is the agent's answer: the outcome, and in _meta what else the caller said.
func permissionResponse(options []acpsdk.PermissionOption, response api.ActionResponse) acpsdk.RequestPermissionResponse {
	out := acpsdk.RequestPermissionResponse{Outcome: selectOutcome(options, response)}
	if out.Outcome.Selected == nil || response.Decision == nil {
		return out
	}
	said := map[string]any{"decision": string(*response.Decision)}
	if response.Message != nil {
		said["message"] = *response.Message
	}
	if *response.Decision == api.DecisionEdit && response.Arguments != nil {
		said["rawInput"] = map[string]any(*response.Arguments)
	}
	if len(said) > 1 {
		out.Meta = map[string]any{metaAnswer: said}
	}
	return out
}

// selectOutcome maps an answer onto the agent's options. A typed answer (the runtime checked
// it against the options) names its option, or its decision picks one: approve and edit the
// first allow_once, reject the first reject_once — never an *_always option the caller did not
// name. A portable answer follows the reference's rules, which never widen what the caller
// approved:
//   - an option list with empty or duplicate ids is ambiguous → cancelled;
//   - an explicit choice is value as a string option id, or value.optionId; a value that names no
//     id → cancelled;
//   - without a choice, approved:true picks the first allow_once option, approved:false the first
//     reject_once option, and no approved at all → cancelled;
//   - an unknown option, an allow_* option without approved:true, or a reject_* option with
//     approved:true → cancelled.
//
// So allow_always is selected only when named explicitly and approved.
func selectOutcome(options []acpsdk.PermissionOption, response api.ActionResponse) acpsdk.RequestPermissionOutcome {
	if !optionIDsUsable(options) {
		return cancelledOutcome()
	}
	approved := response.Approved != nil && *response.Approved
	var chosen *acpsdk.PermissionOption
	switch {
	case response.OptionID != nil:
		chosen = findOption(options, func(o acpsdk.PermissionOption) bool { return string(o.OptionId) == *response.OptionID })
	case response.Value != nil && (response.Decision == nil || *response.Decision != api.DecisionEdit):
		id, ok := explicitOptionID(*response.Value)
		if !ok {
			return cancelledOutcome()
		}
		chosen = findOption(options, func(o acpsdk.PermissionOption) bool { return string(o.OptionId) == id })
	default:
		if response.Approved == nil {
			return cancelledOutcome()
		}
		wanted := acpsdk.PermissionOptionKindRejectOnce
		if approved {
			wanted = acpsdk.PermissionOptionKindAllowOnce
		}
		chosen = findOption(options, func(o acpsdk.PermissionOption) bool { return o.Kind == wanted })
	}
	if chosen == nil {
		return cancelledOutcome()
	}
	allows := strings.HasPrefix(string(chosen.Kind), "allow_")
	rejects := strings.HasPrefix(string(chosen.Kind), "reject_")
	if (allows && !approved) || (rejects && approved) {
		return cancelledOutcome()
	}
	return acpsdk.RequestPermissionOutcome{
		Selected: &acpsdk.RequestPermissionOutcomeSelected{OptionId: chosen.OptionId, Outcome: "selected"},
	}
}

func optionIDsUsable(options []acpsdk.PermissionOption) bool {
	seen := make(map[acpsdk.PermissionOptionId]bool, len(options))
	for _, option := range options {
		if option.OptionId == "" || seen[option.OptionId] {
			return false
		}
		seen[option.OptionId] = true
	}
	return true
}

// explicitOptionID reads the caller's choice: "allow-once" or {"optionId": "allow-once"}.
func explicitOptionID(value any) (string, bool) {
	switch v := value.(type) {
	case string:
		return v, v != ""
	case map[string]any:
		id, ok := v["optionId"].(string)
		return id, ok && id != ""
	default:
		return "", false
	}
}

func findOption(options []acpsdk.PermissionOption, match func(acpsdk.PermissionOption) bool) *acpsdk.PermissionOption {
	for i := range options {
		if match(options[i]) {
			return &options[i]
		}
	}
	return nil
}

func cancelledOutcome() acpsdk.RequestPermissionOutcome {
	return acpsdk.RequestPermissionOutcome{Cancelled: &acpsdk.RequestPermissionOutcomeCancelled{Outcome: "cancelled"}}
}

package acp

import (
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

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

// selectOutcome maps a portable ActionResponse onto the agent's options with the reference's
// rules, which never widen what the caller approved:
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
	if response.Value != nil {
		id, ok := explicitOptionID(*response.Value)
		if !ok {
			return cancelledOutcome()
		}
		chosen = findOption(options, func(o acpsdk.PermissionOption) bool { return string(o.OptionId) == id })
	} else {
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

package backend

import (
	"slices"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// The wire execution as readers get it: a deep copy each, so that nothing a caller holds is
// shared with the runtime's views of the record.

// isTerminalState is harness.yaml's x-terminal, generated into package api.
func isTerminalState(s api.ExecutionState) bool { return s.Terminal() }

// CloneExecution is a deep copy of e: nothing of it is shared with the original.
func CloneExecution(e api.Execution) api.Execution { return cloneExecution(e) }

func cloneExecution(e api.Execution) api.Execution {
	out := e
	out.RequiredCapabilities = slices.Clone(e.RequiredCapabilities)
	if out.RequiredCapabilities == nil {
		out.RequiredCapabilities = []string{}
	}
	out.EffectiveConfig = deepCopyObject(e.EffectiveConfig)
	if out.EffectiveConfig == nil {
		out.EffectiveConfig = api.JSONObject{}
	}
	out.StartedAt = clonePtr(e.StartedAt)
	out.EndedAt = clonePtr(e.EndedAt)
	out.FinalOutput = clonePtr(e.FinalOutput)
	out.CancelReason = clonePtr(e.CancelReason)
	out.Usage = cloneUsage(e.Usage)
	if e.Error != nil {
		errCopy := *e.Error
		out.Error = &errCopy
	}
	if e.PendingAction != nil {
		action := *e.PendingAction
		action.Description = clonePtr(action.Description)
		action.Payload = deepCopyObject(action.Payload)
		out.PendingAction = &action
	}
	return out
}

// cloneUsage is a deep copy of a snapshot's usage (its counts are pointers).
func cloneUsage(u *api.Usage) *api.Usage {
	if u == nil {
		return nil
	}
	out := api.Usage{
		InputTokens: clonePtr(u.InputTokens), OutputTokens: clonePtr(u.OutputTokens),
		CachedReadTokens: clonePtr(u.CachedReadTokens), CachedWriteTokens: clonePtr(u.CachedWriteTokens),
		ThoughtTokens: clonePtr(u.ThoughtTokens), TotalTokens: clonePtr(u.TotalTokens),
		ContextSize: clonePtr(u.ContextSize), ContextUsed: clonePtr(u.ContextUsed), Cost: clonePtr(u.Cost),
	}
	return &out
}

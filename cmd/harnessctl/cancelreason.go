package main

import (
	"strings"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// interruptedBy is the execution whose start interrupted the cancelled execution exec (a newer
// message of a conversation under the interrupt busy policy), or "": the server says so in the
// cancel reason "Interrupted by {id}" (the snapshot's cancelReason, docs/protocol.md §15.7).
// sdk.RunResult.InterruptedBy reads the same reason.
func interruptedBy(exec api.Execution) string {
	if exec.CancelReason == nil {
		return ""
	}
	return sdk.RunResult{Execution: exec, CancelReason: *exec.CancelReason}.InterruptedBy()
}

// cancelledTurn says how a cancelled turn ended, for the chat's history: by which newer message
// it was interrupted, the reason it was cancelled with, or that it was cancelled.
func cancelledTurn(exec api.Execution) string {
	if by := interruptedBy(exec); by != "" {
		return "turn interrupted by " + by + ": a newer message cancelled it"
	}
	if exec.CancelReason != nil && strings.TrimSpace(*exec.CancelReason) != "" {
		return "cancelled: " + *exec.CancelReason
	}
	return "cancelled"
}

package conversation

import (
	"strings"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// The policies, harness.yaml's BusyPolicy enum.
const (
	Parallel  = api.BusyPolicyParallel
	Reject    = api.BusyPolicyReject
	Enqueue   = api.BusyPolicyEnqueue
	Interrupt = api.BusyPolicyInterrupt
)

// policies are the valid values, in the order messages name them.
var policies = []api.BusyPolicy{Parallel, Reject, Enqueue, Interrupt}

// Valid reports whether p is one of the policies.
func Valid(p api.BusyPolicy) bool {
	for _, known := range policies {
		if p == known {
			return true
		}
	}
	return false
}

// Allowed names the valid values for a message: "parallel, reject, enqueue, interrupt".
func Allowed() string {
	names := make([]string, len(policies))
	for i, p := range policies {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// Effective is the policy of a start: its own (override) when it has one, else its
// conversation's, else parallel (a conversation created without one, as every portable client
// creates them).
func Effective(conversation, override *api.BusyPolicy) api.BusyPolicy {
	switch {
	case override != nil:
		return *override
	case conversation != nil:
		return *conversation
	}
	return Parallel
}

// Plan is what a start under a policy asks of the runtime and its store.
type Plan struct {
	// Turn: the store checks the conversation's other executions in the commit that creates
	// this one (store.Turn). False for parallel, which costs nothing more than a portable start.
	Turn bool
	// Reject: the start is refused while any of them is not terminal (CONVERSATION_BUSY).
	Reject bool
	// Interrupt: the executions it waits for are cancelled, with InterruptReason as the reason.
	Interrupt bool
}

// PlanFor is the plan of a start under policy p (a valid one).
func PlanFor(p api.BusyPolicy) Plan {
	switch p {
	case Reject:
		return Plan{Turn: true, Reject: true}
	case Enqueue:
		return Plan{Turn: true}
	case Interrupt:
		return Plan{Turn: true, Interrupt: true}
	}
	return Plan{}
}

// InterruptReason is the cancellation reason of an execution interrupted by newer, a start
// under the interrupt policy: it names the execution that took its place.
func InterruptReason(newer string) string { return interruptPrefix + newer }

const interruptPrefix = "Interrupted by "

// InterruptedBy is the inverse of InterruptReason: the newer execution a cancel reason names,
// false when reason is not an interruption's.
func InterruptedBy(reason string) (string, bool) {
	newer, ok := strings.CutPrefix(reason, interruptPrefix)
	return newer, ok && newer != ""
}

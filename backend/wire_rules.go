package backend

import (
	"github.com/harness-edge/harness-edge/backend/approvals"
	"github.com/harness-edge/harness-edge/backend/conversation"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The runtime's rules that the wire layer (proxy) checks a body by before the runtime sees it,
// so that it can answer with its own field errors, in the protocol's order: the rooms that own
// them (backend/conversation, backend/approvals) stay below the runtime, and the proxy imports
// the runtime alone.

// ValidBusyPolicy reports whether p is one of a conversation's busy policies.
func ValidBusyPolicy(p api.BusyPolicy) bool { return conversation.Valid(p) }

// BusyPolicies names the valid busy policies for a message: "parallel, reject, enqueue, interrupt".
func BusyPolicies() string { return conversation.Allowed() }

// MaxMessageUnits bounds a message (of an answer or a rule) in UTF-16 code units.
const MaxMessageUnits = approvals.MaxMessageUnits

// ClosestName is the candidate that name was probably meant to be, or "" (approvals.Closest):
// how a refused member says what it probably meant ({"approve": …} → approved).
func ClosestName(name string, candidates []string) string { return approvals.Closest(name, candidates) }

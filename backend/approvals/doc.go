// Package approvals is what harness-edge adds to the protocol's actions so that people can run
// a business on them (docs/protocol.md, "Approvals"): typed decisions checked against the action
// they answer (decision.go), standing rules that answer matching approvals at once (rules.go),
// and the expiry that answers an action nobody answered in time (expiry.go).
//
// It decides, and the runtime (package backend) acts: the runtime asks Check whether an answer
// fits its action and Choose which rule answers an action it is about to open, both in the
// commit that records the outcome; the expiry loop asks the runtime to answer through the small
// Host interface, with the handles every operation uses, so nothing here knows where an
// execution runs or holds a lock of the runtime. What must be durable — the rules, the inbox,
// the deadlines — is in the store (store.ActionRecords).
package approvals

import "fmt"

// Invalid is an answer or a rule this package refuses: the member of the request it is about
// (a JSON Pointer, RFC 6901, into the body), why, and what was probably meant, if anything.
type Invalid struct {
	Pointer    string
	Reason     string
	Suggestion string
}

func (e *Invalid) Error() string { return fmt.Sprintf("%s: %s", e.Pointer, e.Reason) }

func invalid(pointer, format string, args ...any) *Invalid {
	return &Invalid{Pointer: pointer, Reason: fmt.Sprintf(format, args...)}
}

package backend

import "github.com/harness-edge/harness-edge/sdk/api"

// pendingActions is what a live execution knows of its actions, guarded by writeMu: the one
// its provider is waiting on (docs/protocol.md §7.1), and the last one opened.
type pendingActions struct {
	pending *pendingAction
	opened  *pendingAction // the last action opened, kept after it is answered (awaitAction)
}

// open makes p the pending action, and the last one opened.
func (a *pendingActions) open(p *pendingAction) { a.pending, a.opened = p, p }

// takePending removes the pending action and returns it (nil when there is none): it is being
// answered for good, abandoned, or failed with its execution.
func (a *pendingActions) takePending() *pendingAction {
	p := a.pending
	a.pending = nil
	return p
}

// pendingAction is the one action a provider is waiting on (docs/protocol.md §7.1).
type pendingAction struct {
	id      string
	request api.ActionRequest // as stored; rewritten with a new status when resolved or abandoned
	reply   chan actionReply  // buffered: answering never blocks the answerer
}

type actionReply struct {
	response api.ActionResponse
	err      error
}

// reject fails the provider's RequestAction with message; nil-safe.
func (p *pendingAction) reject(message string) {
	if p != nil {
		p.reply <- actionReply{err: providerError(message)}
	}
}

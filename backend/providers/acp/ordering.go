package acp

import (
	"context"
	"sync"
)

// updateOrder keeps the agent's order between its session/update notifications and its
// permission requests (docs/acp.md "What the boundary adds to the SDK").
//
// The SDK hands notifications to the handler one after another on one goroutine, but starts
// each request's handler on a goroutine of its own as soon as it reads the request: a permission
// request's handler could open its action (action.required) while updates the agent wrote before
// the request still wait their turn, and the runtime would record them after it. The SDK's own
// barrier only covers responses to our requests, and its counters are unexported.
//
// So the boundary counts at both ends: the pump, which reads the agent's lines in wire order,
// counts each session/update it hands to the SDK; the update handler counts each one it has
// finished with (recorded, or dropped because the execution has ended), in the same order. A
// permission request's handler reads the first count when it starts — its request was handed
// over before it started, so that count covers every update in front of it on the wire, and at
// most a few behind it — and waits until the second reaches it. Only session/update is queued
// by the SDK as a notification: the pump refuses every other notification except
// $/cancel_request (which the SDK handles on its reading goroutine, in no queue) and ACP
// extensions (dropped), and answers a session/update sent with an id itself (inspectCall), so
// that the handler's count is of notifications only.
type updateOrder struct {
	mu        sync.Mutex
	forwarded uint64        // session/updates handed to the SDK
	recorded  uint64        // of those, finished with by the update handler
	progress  chan struct{} // closed when recorded grows while someone waits; nil when nobody does
}

// forward counts a session/update the pump is about to hand to the SDK.
func (o *updateOrder) forward() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.forwarded++
}

// record counts a session/update the handler has finished with.
func (o *updateOrder) record() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.recorded++
	if o.progress != nil {
		close(o.progress)
		o.progress = nil
	}
}

// awaitEarlier waits until every session/update forwarded so far has been recorded, and reports
// whether it got there: false when ctx ended first (the request was cancelled or the connection
// closed). waiting, if not nil, is called once when there is something to wait for.
func (o *updateOrder) awaitEarlier(ctx context.Context, waiting func()) bool {
	o.mu.Lock()
	target := o.forwarded
	o.mu.Unlock()
	for {
		o.mu.Lock()
		if o.recorded >= target {
			o.mu.Unlock()
			return true
		}
		if o.progress == nil {
			o.progress = make(chan struct{})
		}
		progress := o.progress
		o.mu.Unlock()
		if waiting != nil {
			waiting()
			waiting = nil
		}
		select {
		case <-progress:
		case <-ctx.Done():
			return false
		}
	}
}

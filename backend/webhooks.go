package backend

import "github.com/harness-edge/harness-edge/backend/store"

// Webhooks is what the runtime asks of its webhook notifier (package backend/webhook builds
// one; docs/webhooks.md), which it never imports: that keeps net/http out of the runtime.
// The store calls the planner inside every commit that writes an event it wants, so a
// notification is exactly as durable as its event, whichever path committed it.
type Webhooks interface {
	store.OutboxPlanner
	// Start begins delivering the store's outbox. Open calls it once recovery has committed
	// (the planner is set before recovery: its run.failed events are notified too).
	Start(store.Store)
	// Stop ends delivery and waits for it. Close calls it before the store closes, so outcomes
	// in hand are committed.
	Stop()
}

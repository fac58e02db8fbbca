package backend

import (
	"context"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
)

// ConversationForgetter is the optional provider interface for what a provider keeps for a
// conversation between its executions — a native session, a warm process, a working directory.
// Retention calls it when it forgets a conversation: once it has deleted the conversation's
// last execution and the conversation is older than the retention window. The conversation
// record itself stays (conversations have no end); a later execution on it starts afresh.
type ConversationForgetter interface {
	// ForgetConversation releases what the provider holds for conversationID on this node and
	// returns the keys of its state (Run.SaveState) that belong to the conversation. The
	// runtime deletes them in one commit, even when err is not nil (err is logged).
	ForgetConversation(ctx context.Context, conversationID string) (stateKeys []string, err error)
}

// forget asks the providers that keep conversation state to forget each
// conversation of deleted (the executions the retention sweep just removed) that has no
// execution left and was created before cutoff. Failures are logged: the sweep goes on.
func (d *conversationDesk) forget(deleted []store.Execution, cutoff time.Time) {
	type forgetter struct {
		providerID string
		f          ConversationForgetter
	}
	var forgetters []forgetter
	for _, reg := range d.providers.registered() {
		if f, ok := reg.provider.(ConversationForgetter); ok {
			forgetters = append(forgetters, forgetter{reg.manifest.ID, f})
		}
	}
	if len(forgetters) == 0 {
		return
	}
	seen := make(map[string]bool)
	for _, rec := range deleted {
		id := rec.Execution.ConversationID
		if seen[id] || !d.expired(id, cutoff) {
			continue
		}
		seen[id] = true
		batch := &store.Batch{}
		for _, fg := range forgetters {
			keys, err := fg.f.ForgetConversation(context.Background(), id)
			if err != nil {
				d.log.Error("retention: forget a conversation", "provider", fg.providerID, "conversation", id, "err", err)
			}
			for _, key := range keys {
				batch.ProviderStateDeletions = append(batch.ProviderStateDeletions, providerStateKey(fg.providerID, key))
			}
		}
		if batch.Empty() {
			continue
		}
		if err := d.store.Commit(batch); err != nil {
			d.log.Error("retention: delete a conversation's provider state", "conversation", id, "err", err)
		}
	}
}

// expired reports whether conversation id was created before cutoff and has no
// execution left. An error reading it counts as not expired: nothing is forgotten on a guess.
func (d *conversationDesk) expired(id string, cutoff time.Time) bool {
	c, found, err := d.store.Conversation(id)
	if err != nil || !found {
		return false
	}
	created, err := parseTimestamp(c.CreatedAt)
	if err != nil || !created.Before(cutoff) {
		return false
	}
	left, _, err := d.store.ListExecutions(store.ListQuery{ConversationID: id, Tenant: c.Tenant, Limit: 1})
	return err == nil && len(left) == 0
}

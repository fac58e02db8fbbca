package webhook

import (
	"encoding/json"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// ConversationDeleted is the notification type of a conversation's erasure (DELETE
// /v1/conversations/{id}, docs/webhooks.md "conversation.deleted"): not an event of any
// execution — the executions are gone with it — but a receiver that kept what earlier
// notifications carried learns that it should erase it too. Part of DefaultEvents.
const ConversationDeleted = "conversation.deleted"

// ErasureNotifications makes the rows of an erasure, inside the transaction that erases the
// conversation (the store's erasure planner hook), so the notification is exactly as durable
// as the erasure. A row's lane is keyed by the conversation's id in place of an execution's
// (the two never share an id), sequence 0: its message id is msg_conv_…_0, the same for every
// receiver and stable across retries.
func (p *planner) ErasureNotifications(t store.Tombstone, at time.Time) ([]store.Notification, error) {
	var body []byte
	var out []store.Notification
	for _, tg := range p.targets {
		if !tg.servesTenant(t.Tenant) || !tg.events[ConversationDeleted] {
			continue
		}
		if body == nil {
			var err error
			if body, err = erasurePayload(t); err != nil {
				return nil, err
			}
		}
		out = append(out, store.Notification{
			ExecutionID: t.ConversationID, Sequence: 0, Target: tg.id, URL: tg.url,
			Body: body, CreatedAt: at, NextAttempt: at,
		})
	}
	return out, nil
}

// erasurePayload is the Standard Webhooks envelope of an erasure: its data is the tombstone
// as DELETE answered it (api.ConversationDeletion), with the tenant for a receiver that serves
// several.
func erasurePayload(t store.Tombstone) ([]byte, error) {
	deletedAt := t.DeletedAt.UTC().Format("2006-01-02T15:04:05.000Z")
	type data struct {
		api.ConversationDeletion
		Tenant string `json:"tenant,omitempty"`
	}
	return json.Marshal(struct {
		Type      string        `json:"type"`
		Timestamp api.Timestamp `json:"timestamp"`
		Data      data          `json:"data"`
	}{Type: ConversationDeleted, Timestamp: deletedAt, Data: data{
		ConversationDeletion: api.ConversationDeletion{ConversationID: t.ConversationID, DeletedAt: deletedAt, Executions: t.Executions},
		Tenant:               t.Tenant,
	}})
}

// The planner announces erasures (checked by the compiler: the store looks for this side).
var _ store.ErasurePlanner = (*planner)(nil)

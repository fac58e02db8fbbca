package backend

import (
	"context"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// CreateConversation stores a new conversation owned by ctx's tenant; metadata is copied (nil = {}).
func (r *Runtime) CreateConversation(ctx context.Context, metadata api.JSONObject) (api.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return api.Conversation{}, err
	}
	if err := r.checkOpen(); err != nil {
		return api.Conversation{}, err
	}
	meta, err := normalizeObject(metadata)
	if err != nil {
		return api.Conversation{}, newError(CodeValidation, "Invalid conversation request")
	}
	c := api.Conversation{ID: newConversationID(), CreatedAt: now(), Metadata: meta}
	rec := store.Conversation{Conversation: c, Tenant: TenantFrom(ctx).ID}
	if err := r.store.Commit(&store.Batch{Conversations: []store.Conversation{rec}}); err != nil {
		return api.Conversation{}, storeError("commit conversation", err)
	}
	r.conversations.add(c.ID, rec.Tenant)
	c.Metadata = deepCopyObject(meta)
	return c, nil
}

// GetConversation returns the conversation; NOT_FOUND when unknown or another tenant's.
func (r *Runtime) GetConversation(ctx context.Context, id string) (api.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return api.Conversation{}, err
	}
	if err := r.checkOpen(); err != nil {
		return api.Conversation{}, err
	}
	rec, err := r.conversationFor(ctx, id)
	if err != nil {
		return api.Conversation{}, err
	}
	c := rec.Conversation
	if c.Metadata == nil {
		c.Metadata = api.JSONObject{}
	}
	return c, nil
}

package backend

import (
	"context"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// CreateConversation stores a new conversation; metadata is copied (nil = {}).
func (r *Runtime) CreateConversation(ctx context.Context, metadata api.JsonObject) (api.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return api.Conversation{}, err
	}
	if err := r.checkOpen(); err != nil {
		return api.Conversation{}, err
	}
	meta, _, err := normalizeObject(metadata)
	if err != nil {
		return api.Conversation{}, newError(CodeValidation, "Invalid conversation request")
	}
	c := api.Conversation{Id: newID(conversationIDPrefix), CreatedAt: now(), Metadata: meta}
	if err := r.store.Commit(&storeBatch{conversations: []api.Conversation{c}}); err != nil {
		return api.Conversation{}, storeError("commit conversation", err)
	}
	c.Metadata = deepCopyObject(meta)
	return c, nil
}

// GetConversation returns the conversation; NOT_FOUND when unknown.
func (r *Runtime) GetConversation(ctx context.Context, id string) (api.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return api.Conversation{}, err
	}
	if err := r.checkOpen(); err != nil {
		return api.Conversation{}, err
	}
	c, found, err := r.store.Conversation(id)
	if err != nil {
		return api.Conversation{}, internalError("read conversation", err)
	}
	if !found {
		return api.Conversation{}, errConversationNotFound(id)
	}
	if c.Metadata == nil {
		c.Metadata = api.JsonObject{}
	}
	return c, nil
}

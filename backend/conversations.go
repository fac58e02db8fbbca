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

// requireConversation returns nil when ctx's tenant owns conversation id, and the NOT_FOUND of
// GetConversation otherwise (unknown, or another tenant's). Only the owner's own starts skip
// the store: another tenant's conversation is read as an unknown one is, so the answer costs
// the same and its time tells nothing (as for executions, see tenant.go).
func (r *Runtime) requireConversation(ctx context.Context, id string) error {
	if owner, ok := r.conversations.owner(id); ok && owner == TenantFrom(ctx).ID {
		return nil
	}
	_, err := r.conversationFor(ctx, id) // adds it to r.conversations when found
	return err
}

// conversationFor reads conversation id as the caller's tenant sees it; another tenant's
// conversation is NOT_FOUND after the same one store read an unknown id costs.
func (r *Runtime) conversationFor(ctx context.Context, id string) (store.Conversation, error) {
	c, found, err := r.store.Conversation(id)
	if err != nil {
		return store.Conversation{}, internalError("read conversation", err)
	}
	if !found {
		return store.Conversation{}, errConversationNotFound(id)
	}
	r.conversations.add(id, c.Tenant)
	if c.Tenant != TenantFrom(ctx).ID {
		return store.Conversation{}, errConversationNotFound(id)
	}
	return c, nil
}

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
	rec, err := r.conversations.lookup(ctx, r.store, id)
	if err != nil {
		return api.Conversation{}, err
	}
	c := rec.Conversation
	if c.Metadata == nil {
		c.Metadata = api.JSONObject{}
	}
	return c, nil
}

// require returns nil when ctx's tenant owns conversation id, and the NOT_FOUND of
// GetConversation otherwise (unknown, or another tenant's). Only the owner's own starts skip
// the store: another tenant's conversation is read as an unknown one is, so the answer costs
// the same and its time tells nothing (as for executions, see tenant.go).
func (k *knownConversations) require(ctx context.Context, st store.Store, id string) error {
	if owner, ok := k.owner(id); ok && owner == TenantFrom(ctx).ID {
		return nil
	}
	_, err := k.lookup(ctx, st, id) // remembers it when found
	return err
}

// lookup reads conversation id as the caller's tenant sees it; another tenant's
// conversation is NOT_FOUND after the same one store read an unknown id costs.
func (k *knownConversations) lookup(ctx context.Context, st store.Store, id string) (store.Conversation, error) {
	c, found, err := st.Conversation(id)
	if err != nil {
		return store.Conversation{}, internalError("read conversation", err)
	}
	if !found {
		return store.Conversation{}, errConversationNotFound(id)
	}
	k.add(id, c.Tenant)
	if c.Tenant != TenantFrom(ctx).ID {
		return store.Conversation{}, errConversationNotFound(id)
	}
	return c, nil
}

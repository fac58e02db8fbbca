package backend

import (
	"context"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// CreateConversation stores a new conversation owned by ctx's tenant; metadata is copied (nil = {}).
func (r *Runtime) CreateConversation(ctx context.Context, metadata api.JSONObject) (api.Conversation, error) {
	return r.CreateConversationFrom(ctx, api.CreateConversationRequest{Metadata: &metadata})
}

// CreateConversationFrom is CreateConversation with every field of the request: the metadata
// and the busy policy (an extension, docs/protocol.md "Busy conversations"), kept on the
// conversation and shown in its snapshot only when given. An unknown policy is a
// VALIDATION_ERROR naming the allowed ones.
func (r *Runtime) CreateConversationFrom(ctx context.Context, req api.CreateConversationRequest) (api.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return api.Conversation{}, err
	}
	if err := r.checkOpen(); err != nil {
		return api.Conversation{}, err
	}
	var metadata api.JSONObject
	if req.Metadata != nil {
		metadata = *req.Metadata
	}
	meta, err := normalizeObject(metadata)
	if err != nil {
		return api.Conversation{}, newError(CodeValidation, "Invalid conversation request")
	}
	if err := checkBusyPolicy(req.BusyPolicy); err != nil {
		return api.Conversation{}, err
	}
	c := api.Conversation{ID: newConversationID(), CreatedAt: now(), Metadata: meta, BusyPolicy: clonePtr(req.BusyPolicy)}
	rec := store.Conversation{Conversation: c, Tenant: TenantFrom(ctx).ID}
	if err := r.store.Commit(&store.Batch{Conversations: []store.Conversation{rec}}); err != nil {
		return api.Conversation{}, storeError("commit conversation", err)
	}
	r.conversations.add(c, rec.Tenant)
	c.Metadata = deepCopyObject(meta)
	c.BusyPolicy = clonePtr(c.BusyPolicy)
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
	c.BusyPolicy = clonePtr(c.BusyPolicy)
	return c, nil
}

// require returns the busy policy of conversation id (nil: parallel) when ctx's tenant owns
// it, and the NOT_FOUND of GetConversation otherwise (unknown, or another tenant's). Only the
// owner's own starts skip the store: another tenant's conversation is read as an unknown one
// is, so the answer costs the same and its time tells nothing (as for executions, see
// tenant.go).
func (k *knownConversations) require(ctx context.Context, st store.Store, id string) (*api.BusyPolicy, error) {
	if c, ok := k.get(id); ok && c.tenant == TenantFrom(ctx).ID {
		return c.policy, nil
	}
	rec, err := k.lookup(ctx, st, id) // remembers it when found
	return rec.Conversation.BusyPolicy, err
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
	k.add(c.Conversation, c.Tenant)
	if c.Tenant != TenantFrom(ctx).ID {
		return store.Conversation{}, errConversationNotFound(id)
	}
	return c, nil
}

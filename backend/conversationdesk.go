package backend

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/harness-edge/harness-edge/backend/conversation"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// conversationDesk is the runtime's conversations: creating them and reading them for their
// tenant, the owners and busy policies seen so far (so a start checks its conversation without
// a store read), and what retention has providers forget of them (forget, below). The Runtime
// embeds it: CreateConversation, CreateConversationFrom and GetConversation are its own API.
type conversationDesk struct {
	store store.Store
	open  func() error // Runtime.checkOpen: ErrClosed once the runtime closed
	log   *slog.Logger
	// forgetters are the registered providers that keep conversation state, in registration
	// order: retention asks them to forget a conversation (forget).
	forgetters func() []conversationForgetter
	known      knownConversations
	// updates makes this runtime's UpdateConversation calls one at a time (conversationupdate.go).
	updates sync.Mutex
}

// CreateConversation stores a new conversation owned by ctx's tenant; metadata is copied (nil = {}).
func (d *conversationDesk) CreateConversation(ctx context.Context, metadata api.JSONObject) (api.Conversation, error) {
	return d.CreateConversationFrom(ctx, api.CreateConversationRequest{Metadata: &metadata})
}

// CreateConversationFrom is CreateConversation with every field of the request: the metadata
// and the busy policy (an extension, docs/protocol.md "Busy conversations"), kept on the
// conversation and shown in its snapshot only when given. An unknown policy is a
// VALIDATION_ERROR naming the allowed ones.
func (d *conversationDesk) CreateConversationFrom(ctx context.Context, req api.CreateConversationRequest) (api.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return api.Conversation{}, err
	}
	if err := d.open(); err != nil {
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
	if err := d.store.Commit(&store.Batch{Conversations: []store.Conversation{rec}}); err != nil {
		return api.Conversation{}, storeError("commit conversation", err)
	}
	d.known.add(c, rec.Tenant)
	c.Metadata = deepCopyObject(meta)
	c.BusyPolicy = clonePtr(c.BusyPolicy)
	return c, nil
}

// GetConversation returns the conversation; NOT_FOUND when unknown or another tenant's.
func (d *conversationDesk) GetConversation(ctx context.Context, id string) (api.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return api.Conversation{}, err
	}
	if err := d.open(); err != nil {
		return api.Conversation{}, err
	}
	rec, err := d.lookup(ctx, id)
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

// checkBusyPolicy is nil for an absent or known policy, else the VALIDATION_ERROR naming the
// allowed ones (the HTTP binding says the same, with the field, before the runtime is asked).
func checkBusyPolicy(p *api.BusyPolicy) error {
	if p == nil || conversation.Valid(*p) {
		return nil
	}
	return newError(CodeValidation, "busyPolicy must be one of %s", conversation.Allowed())
}

// require returns the busy policy of conversation id (nil: parallel) when ctx's tenant owns
// it, and the NOT_FOUND of GetConversation otherwise (unknown, or another tenant's). Only the
// owner's own starts skip the store: another tenant's conversation is read as an unknown one
// is, so the answer costs the same and its time tells nothing (as for executions, see
// tenant.go).
func (d *conversationDesk) require(ctx context.Context, id string) (*api.BusyPolicy, error) {
	if c, ok := d.known.get(id); ok && c.tenant == TenantFrom(ctx).ID {
		return c.policy, nil
	}
	rec, err := d.lookup(ctx, id) // remembers it when found
	return rec.Conversation.BusyPolicy, err
}

// lookup reads conversation id as the caller's tenant sees it; another tenant's
// conversation is NOT_FOUND after the same one store read an unknown id costs.
func (d *conversationDesk) lookup(ctx context.Context, id string) (store.Conversation, error) {
	c, found, err := d.store.Conversation(id)
	if err != nil {
		return store.Conversation{}, internalError("read conversation", err)
	}
	if !found {
		return store.Conversation{}, errConversationNotFound(id)
	}
	d.known.add(c.Conversation, c.Tenant)
	if c.Tenant != TenantFrom(ctx).ID {
		return store.Conversation{}, errConversationNotFound(id)
	}
	return c, nil
}

// knownConversations remembers which tenant owns the conversations this runtime has seen, and
// their busy policy, so a start checks its conversation without a store read (a read
// transaction and a JSON decode per execution). A conversation's tenant and busy policy never
// change (UpdateConversation changes only its title and metadata). A deleted conversation's
// entry is removed here before the erasure commits, and on every other node when the
// erasure's marker reaches it (conversationdelete.go); a start that meets a stale entry in
// between is refused by the store all the same (store.ErrConversationGone: NOT_FOUND). An id
// not in it is looked up in the store as before. Bounded: when full it starts over,
// which costs one store read per conversation in use.
type knownConversations struct {
	mu    sync.Mutex
	known map[string]knownConversation
}

// knownConversation is what a start needs of a conversation: who owns it and its busy policy
// (nil: parallel, as created by a portable client).
type knownConversation struct {
	tenant string
	policy *api.BusyPolicy
}

// maxKnownConversations bounds the memory: about 100 bytes an entry, so ~1.6 MiB.
const maxKnownConversations = 16384

// get returns conversation id, if it was seen.
func (k *knownConversations) get(id string) (knownConversation, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	c, ok := k.known[id]
	return c, ok
}

// add records conversation c (created or read from the store).
func (k *knownConversations) add(c api.Conversation, tenant string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.known == nil || len(k.known) >= maxKnownConversations {
		k.known = make(map[string]knownConversation)
	}
	k.known[c.ID] = knownConversation{tenant: tenant, policy: c.BusyPolicy}
}

// remove forgets conversation id (deleted).
func (k *knownConversations) remove(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.known, id)
}

// ConversationForgetter is the optional provider interface for what a provider keeps for a
// conversation between its executions — a native session, a warm process, a working directory.
// Retention calls it when it forgets a conversation: once it has deleted the conversation's
// last execution and the conversation is older than the retention window. The conversation
// record itself stays (conversations have no end); a later execution on it starts afresh.
// DeleteConversation calls it too, before the erasure's commit and on every node once the
// erasure reached it (conversationdelete.go): then the conversation never comes back.
type ConversationForgetter interface {
	// ForgetConversation releases what the provider holds for conversationID on this node and
	// returns the keys of its state (Run.SaveState) that belong to the conversation. The
	// runtime deletes them in one commit, even when err is not nil (err is logged).
	ForgetConversation(ctx context.Context, conversationID string) (stateKeys []string, err error)
}

// conversationForgetter is a registered provider that keeps conversation state.
type conversationForgetter struct {
	providerID string
	forgetter  ConversationForgetter
}

// forget asks the providers that keep conversation state to forget each
// conversation of deleted (the executions the retention sweep just removed) that has no
// execution left and was created before cutoff. Failures are logged: the sweep goes on.
func (d *conversationDesk) forget(deleted []store.Execution, cutoff time.Time) {
	forgetters := d.forgetters()
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
			keys, err := fg.forgetter.ForgetConversation(context.Background(), id)
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

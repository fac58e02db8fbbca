package backend

import (
	"sync"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// knownConversations remembers which tenant owns the conversations this runtime has seen, and
// their busy policy, so a start checks its conversation without a store read (a read
// transaction and a JSON decode per execution). Conversations never change and are never deleted (retention keeps them, the
// protocol has no delete), on this node or any other sharing the store, so an entry never goes
// stale; an id not in it is looked up in the store as before. Bounded: when full it starts over,
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

package backend

import (
	"sync"
)

// knownConversations remembers which tenant owns the conversations this runtime has seen, so a
// start checks its conversation without a store read (a read transaction and a JSON decode per
// execution). Conversations never change and are never deleted (retention keeps them, the
// protocol has no delete), on this node or any other sharing the store, so an entry never goes
// stale; an id not in it is looked up in the store as before. Bounded: when full it starts over,
// which costs one store read per conversation in use.
type knownConversations struct {
	mu     sync.Mutex
	tenant map[string]string // conversation id → owning tenant
}

// maxKnownConversations bounds the memory: about 100 bytes an entry, so ~1.6 MiB.
const maxKnownConversations = 16384

// owner returns the tenant of conversation id, if it was seen.
func (k *knownConversations) owner(id string) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	t, ok := k.tenant[id]
	return t, ok
}

// add records that tenant owns conversation id (created or read from the store).
func (k *knownConversations) add(id, tenant string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.tenant == nil || len(k.tenant) >= maxKnownConversations {
		k.tenant = make(map[string]string)
	}
	k.tenant[id] = tenant
}

package backend

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"sync"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// requestFingerprint identifies an execution request for idempotency (docs/protocol.md §6):
// SHA-256 of the canonical JSON (see appendCanonicalJSON) of exactly conversationId,
// providerId, input, the sorted de-duplicated requiredCapabilities and config (absent = {}).
// Key order inside config does not matter, array order does, and 1 equals 1.0.
func requestFingerprint(conversationID, providerID, input string, sortedCaps []string, config api.JSONObject) (string, error) {
	caps := make([]any, len(sortedCaps))
	for i, c := range sortedCaps {
		caps[i] = c
	}
	if config == nil {
		config = api.JSONObject{}
	}
	doc := map[string]any{
		"conversationId":       conversationID,
		"providerId":           providerID,
		"input":                input,
		"requiredCapabilities": caps,
		"config":               map[string]any(config),
	}
	canonical, err := appendCanonicalJSON(nil, doc)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}

// idempotencyLockKey names the in-process lock of (tenant, conversation, key). The tenant's
// length comes first, so no choice of names makes two triples share a lock.
func idempotencyLockKey(tenant, conversationID, key string) string {
	return strconv.Itoa(len(tenant)) + ":" + tenant + conversationID + "\x00" + key
}

// keyedMutex is one mutex per key, created on demand and dropped when unused, so idempotent
// starts with different keys never wait for each other (nor for each other's fsync).
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	mu   sync.Mutex
	refs int // holders and waiters; guarded by keyedMutex.mu
}

func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = make(map[string]*keyedLock)
	}
	l := k.locks[key]
	if l == nil {
		l = &keyedLock{}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()

	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

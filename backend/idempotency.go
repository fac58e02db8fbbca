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
//
// The canonical document is written straight into a pooled buffer, its five keys in their
// canonical (sorted) order, rather than built as a map and sorted: every idempotent start (every
// start of the SDK) computes one. The bytes hashed are exactly appendCanonicalJSON's of that
// map, so fingerprints stored by earlier versions still match (TestFingerprintIsTheCanonicalDocuments).
//
// A busy policy other than parallel (docs/protocol.md "Busy conversations") is part of the
// request too, under "busyPolicy" (the first key in canonical order): a replay under another
// policy is another request (IDEMPOTENCY_CONFLICT), and one under the same policy, given
// explicitly or by its conversation, is the same. Parallel, the portable behaviour, adds nothing,
// so the fingerprints of every start made before the extension keep their meaning.
func requestFingerprint(conversationID, providerID, input string, sortedCaps []string, config api.JSONObject, policy api.BusyPolicy) (string, error) {
	bp := fingerprintBuffers.Get().(*[]byte)
	defer fingerprintBuffers.Put(bp)
	buf := append((*bp)[:0], '{')
	if policy != "" && policy != api.BusyPolicyParallel {
		buf = append(buf, `"busyPolicy":`...)
		buf = appendCanonicalString(buf, string(policy))
		buf = append(buf, ',')
	}
	buf = append(buf, `"config":`...)
	if config == nil {
		buf = append(buf, "{}"...)
	} else {
		var err error
		if buf, err = appendCanonicalJSON(buf, map[string]any(config)); err != nil {
			return "", err
		}
	}
	buf = append(buf, `,"conversationId":`...)
	buf = appendCanonicalString(buf, conversationID)
	buf = append(buf, `,"input":`...)
	buf = appendCanonicalString(buf, input)
	buf = append(buf, `,"providerId":`...)
	buf = appendCanonicalString(buf, providerID)
	buf = append(buf, `,"requiredCapabilities":[`...)
	for i, c := range sortedCaps {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendCanonicalString(buf, c)
	}
	buf = append(buf, "]}"...)
	*bp = buf
	sum := sha256.Sum256(buf)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:]), nil
}

// fingerprintBuffers holds the canonical documents' buffers between starts.
var fingerprintBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

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

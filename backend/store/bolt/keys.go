package bolt

import "encoding/binary"

// Keys: big-endian numbers that sort as they count, carved from shared chunks so that a
// group commit's keys do not cost one allocation each.

// keyArena hands out the event keys of one group commit from shared chunks: bbolt keeps a
// key until its transaction commits, and a group commit holds thousands of events, each of
// which had its own key allocation. Chunks are never reused, so each key stays valid as long
// as bbolt holds it.
type keyArena struct{ chunk []byte }

const keyArenaChunk = 4 << 10

// numbered is numberedKey(executionID, n), carved from the arena.
func (a *keyArena) numbered(executionID string, n uint64) []byte {
	key := a.carve(len(executionID) + 8)
	key = append(key, executionID...)
	return binary.BigEndian.AppendUint64(key, n)
}

// carve returns an empty slice with room for size bytes, from the arena (values too: bbolt
// keeps them until the commit as well). Appending more than size bytes reallocates.
func (a *keyArena) carve(size int) []byte {
	if size > keyArenaChunk/4 {
		return make([]byte, 0, size)
	}
	if cap(a.chunk)-len(a.chunk) < size {
		a.chunk = make([]byte, 0, keyArenaChunk)
	}
	start := len(a.chunk)
	a.chunk = a.chunk[:start+size]
	return a.chunk[start : start : start+size]
}

func numberedKey(executionID string, n uint64) []byte {
	key := make([]byte, len(executionID)+8)
	copy(key, executionID)
	binary.BigEndian.PutUint64(key[len(executionID):], n)
	return key
}

// idempotencyKey is the store key of an idempotency record. The anonymous tenant keeps the form
// written before tenancy existed (conversation id + 0x00 + key), so records of older files are
// still found. A named tenant's keys start with 0x01 (a conversation id never does), then the
// tenant's length and the tenant: no tenant name, however chosen, can make its keys collide with
// another tenant's.
func idempotencyKey(tenant, conversationID, key string) []byte {
	if tenant == "" {
		return []byte(conversationID + "\x00" + key)
	}
	out := make([]byte, 0, 1+binary.MaxVarintLen64+len(tenant)+len(conversationID)+1+len(key))
	out = append(out, 0x01)
	out = binary.AppendUvarint(out, uint64(len(tenant)))
	out = append(out, tenant...)
	out = append(out, conversationID...)
	out = append(out, 0x00)
	return append(out, key...)
}

package bolt

import (
	"encoding/binary"
	"fmt"

	"github.com/harness-edge/harness-edge/backend/store"
)

// An event's value in the events bucket (format 3): its checksum (store.EventChecksum of the
// key's sequence, the type and the JSON; 4 bytes, big-endian), the length of its type (one
// byte), the type, then the wire JSON, kept byte for byte. The type is a field of its own, so
// reading an event never parses its JSON; the sequence is in the key; the checksum is compared
// on every read from the file, where a byte can be damaged (bbolt keeps no checksum of values).
//
//	[checksum] [len(type)] [type] [RuntimeEvent JSON]
//
// Formats 1 (the JSON alone) and 2 (no checksum) are rewritten once by migrate.go.

const checksumLen = 4

// appendEventValue appends e's value to dst.
func appendEventValue(dst []byte, e store.Event) []byte {
	dst = binary.BigEndian.AppendUint32(dst, store.ChecksumOf(e))
	dst = append(dst, byte(len(e.Type)))
	dst = append(dst, e.Type...)
	return append(dst, e.JSON...)
}

func eventValueLen(e store.Event) int { return checksumLen + 1 + len(e.Type) + len(e.JSON) }

// decodeEventValue rebuilds the event numbered seq from its value v (kept, not copied).
func decodeEventValue(seq int64, v []byte) (store.Event, error) {
	if len(v) <= checksumLen || checksumLen+1+int(v[checksumLen]) > len(v) {
		return store.Event{}, fmt.Errorf("%w: stored event %d: a value of %d bytes", store.ErrUndecodable, seq, len(v))
	}
	sum, n := binary.BigEndian.Uint32(v), int(v[checksumLen])
	rest := v[checksumLen+1:]
	return store.EventOf(seq, rest[:n], rest[n:], sum)
}

package bolt

import (
	"fmt"

	"github.com/harness-edge/harness-edge/backend/store"
)

// An event's value in the events bucket: the length of its type (one byte), the type, then
// the wire JSON, kept byte for byte. The type is a field of its own, so reading an event never
// parses its JSON; the sequence is in the key.
//
//	[len(type)] [type] [RuntimeEvent JSON]

// appendEventValue appends e's value to dst.
func appendEventValue(dst []byte, e store.Event) []byte {
	dst = append(dst, byte(len(e.Type)))
	dst = append(dst, e.Type...)
	return append(dst, e.JSON...)
}

func eventValueLen(e store.Event) int { return 1 + len(e.Type) + len(e.JSON) }

// decodeEventValue rebuilds the event numbered seq from its value v (kept, not copied).
func decodeEventValue(seq int64, v []byte) (store.Event, error) {
	if len(v) == 0 || int(v[0])+1 > len(v) {
		return store.Event{}, fmt.Errorf("%w: stored event %d: a value of %d bytes", store.ErrUndecodable, seq, len(v))
	}
	n := int(v[0])
	return store.EventOf(seq, v[1:1+n], v[1+n:])
}

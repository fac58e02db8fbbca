package proxy

import (
	"bytes"
	"strconv"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/backend"
)

// writeEventFrame writes ev into b as one SSE message — its id, its type as the event, the
// retry hint when it is at least a millisecond, and its stored JSON as the data — byte for byte
// what go-sse's Message.WriteTo writes for eventMessage(id, ev) with that Retry
// (TestEventFrameIsGoSSEs, FuzzEventFrameIsGoSSEs). go-sse keeps a message's data in a slice
// of chunks that it allocates, and every live event is framed once per subscriber: an
// allocation per event per subscriber, which this avoids. The id and the type were checked
// single-line by go-sse (sse.ID, and the runtime's event types are plain). Data that go-sse
// would split across several data lines, or leave out (stored event JSON is compact: one line,
// never empty), is framed by go-sse itself.
func writeEventFrame(b *bytes.Buffer, id sse.EventID, ev backend.Event, retry time.Duration) {
	if len(ev.JSON) == 0 || bytes.IndexByte(ev.JSON, '\n') >= 0 || bytes.IndexByte(ev.JSON, '\r') >= 0 {
		msg := eventMessage(id, ev)
		msg.Retry = retry
		_, _ = msg.WriteTo(b) // a bytes.Buffer does not fail
		return
	}
	if id.IsSet() {
		b.WriteString("id: ")
		b.WriteString(id.String())
		b.WriteByte('\n')
	}
	b.WriteString("event: ")
	b.WriteString(sse.Type(string(ev.Type)).String())
	b.WriteByte('\n')
	if ms := retry.Milliseconds(); ms > 0 {
		var digits [20]byte
		b.WriteString("retry: ")
		b.Write(strconv.AppendInt(digits[:0], ms, 10))
		b.WriteByte('\n')
	}
	b.WriteString("data: ")
	b.Write(ev.JSON)
	b.WriteString("\n\n")
}

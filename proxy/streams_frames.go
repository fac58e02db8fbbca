package proxy

import (
	"bytes"
	"sync"
	"unsafe"

	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/streams"
)

// sharedFrames keeps the SSE frames of the newest log entries, made once and sent by every
// conversation or tenant stream of the same scope. Every stream of a scope sends an entry as the
// same bytes (its cursor under the scope's tag, its type, its JSON): a thousand subscribers of a
// tenant's stream framed each event a thousand times, go-sse's framing (a scan of the data for
// line breaks, copies) a sixth of the server's CPU. The first stream to send an entry frames it
// with go-sse; the others copy the bytes.
//
// Two generations bound the memory: when the current one holds frameGenerationBytes, it becomes
// the old one and the old one goes. A stream that falls further behind frames what it sends
// itself, as before. Frames are immutable once kept.
type sharedFrames struct {
	mu       sync.RWMutex
	cur, old map[frameKey][]byte
	curBytes int
}

type frameKey struct {
	tag string // the scope's cursor tag (streams.Hub.CursorTag)
	pos int64
}

// frameGenerationBytes bounds one generation: with events of a few hundred bytes, the newest
// ten thousand or so, more than a second of a busy node's events.
const frameGenerationBytes = 4 << 20

// frame returns the frame of the entry at pos under tag: id (its cursor), event (its type) and
// data (its JSON), without retry (a stream's first event message carries the retry hint and is
// framed on its own).
func (c *sharedFrames) frame(tag string, pos int64, ev backend.Event) []byte {
	key := frameKey{tag, pos}
	c.mu.RLock()
	f, ok := c.cur[key]
	if !ok {
		f, ok = c.old[key]
	}
	c.mu.RUnlock()
	if ok {
		return f
	}
	f = frameOf(sse.ID(streams.FormatCursor(tag, pos)), ev)
	c.mu.Lock()
	if c.curBytes+len(f) > frameGenerationBytes {
		c.old, c.cur, c.curBytes = c.cur, nil, 0
	}
	if c.cur == nil {
		c.cur = map[frameKey][]byte{}
	}
	if _, dup := c.cur[key]; !dup { // (another stream framed it meanwhile)
		c.cur[key] = f
		c.curBytes += len(f)
	}
	c.mu.Unlock()
	return f
}

// frameOf frames ev as one SSE message with go-sse.
func frameOf(id sse.EventID, ev backend.Event) []byte {
	msg := sse.Message{ID: id, Type: sse.Type(string(ev.Type))}
	// Stored event JSON is compact (one data line) and immutable: framed without a copy.
	msg.AppendData(unsafe.String(unsafe.SliceData(ev.JSON), len(ev.JSON)))
	var b bytes.Buffer
	b.Grow(len(ev.JSON) + len(ev.Type) + 64)
	_, _ = msg.WriteTo(&b) // a bytes.Buffer does not fail
	return b.Bytes()
}

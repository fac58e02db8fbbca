package proxy

import (
	"bytes"
	"sync/atomic"

	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/backend"
)

// sharedFrames keeps the SSE frames of the newest log entries, made once and sent by every
// conversation or tenant stream of the same scope. Every stream of a scope sends an entry as the
// same bytes (its cursor under the scope's tag, its type, its JSON): a thousand subscribers of a
// tenant's stream framed each event a thousand times, go-sse's framing (a scan of the data for
// line breaks, copies) a sixth of the server's CPU. The first stream to send an entry frames it
// with go-sse; the others copy the bytes.
//
// A direct-mapped table without locks: an entry has one frame per kind of stream (its
// conversation's, its tenant's), and its slot is fixed by its position and that kind, so the
// newest frameSlots/2 positions each keep theirs, and older ones are overwritten as new ones
// come. A stream that falls further behind frames what it sends itself, as before. (A map
// under a read-write lock, the first version, stalled a thousand readers whenever one stream
// added a frame: the lag's p99 grew several times.) Frames are immutable once made.
type sharedFrames struct {
	slots [frameSlots]atomic.Pointer[frameSlot]
}

type frameSlot struct {
	tag   string // the scope's cursor tag (backend.Stream.Shared)
	pos   int64
	frame []byte
}

const (
	// frameSlots bounds what is kept: 4,096 frames of at most maxSharedFrame bytes (a few
	// hundred each for most events: about a megabyte).
	frameSlots = 4096
	// maxSharedFrame: a larger frame (a big artifact event) is not kept; each stream frames it.
	maxSharedFrame = 16 << 10
)

// frame returns the frame of the entry at pos under tag (conversation: a conversation's stream,
// else a tenant's): id (its cursor), event (its type) and data (its JSON), without retry (a
// stream's first event message carries the retry hint and is framed on its own).
func (c *sharedFrames) frame(tag string, conversation bool, pos int64, ev backend.Event) []byte {
	i := 2 * pos
	if conversation {
		i++
	}
	slot := &c.slots[i&(frameSlots-1)]
	if s := slot.Load(); s != nil && s.pos == pos && s.tag == tag {
		return s.frame
	}
	f := frameOf(sse.ID(backend.FormatStreamCursor(tag, pos)), ev)
	if len(f) <= maxSharedFrame {
		slot.Store(&frameSlot{tag: tag, pos: pos, frame: f})
	}
	return f
}

// frameOf frames ev as one SSE message with go-sse (eventMessage, as an unshared stream does).
func frameOf(id sse.EventID, ev backend.Event) []byte {
	msg := eventMessage(id, ev)
	var b bytes.Buffer
	b.Grow(len(ev.JSON) + len(ev.Type) + 64)
	_, _ = msg.WriteTo(&b) // a bytes.Buffer does not fail
	return b.Bytes()
}

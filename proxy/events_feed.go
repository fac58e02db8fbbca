package proxy

import (
	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/backend"
)

// gapEventType is the type of the first message of a stream whose cursor had expired (the
// runtime sends it: backend.StreamGapEventType).
const gapEventType = backend.StreamGapEventType

// eventFeed is what a stream sends: a stream of any scope the runtime opened (streamFeed).
type eventFeed interface {
	// Ready, Read, AwaitingAction, Lapsed and Close are backend.Stream's.
	Ready() <-chan struct{}
	Read(max int) (events []backend.Event, done bool, err error)
	AwaitingAction() bool
	Lapsed() <-chan struct{}
	Close()
	// eventID is the SSE id of events[i] of the last Read.
	eventID(i int, ev backend.Event) sse.EventID
	// sharedFrame is the frame of events[i] of the last Read (without retry) when streams
	// share it (streams_frames.go), else nil.
	sharedFrame(i int, ev backend.Event) []byte
}

// streamFeed is a backend.Stream as a feed: its ids are the runtime's (an execution event's
// sequence, a log entry's cursor), and the frames of a conversation's or a tenant's entries
// are shared by the streams of their scope.
type streamFeed struct {
	*backend.Stream
	frames *sharedFrames
}

func (f streamFeed) eventID(i int, ev backend.Event) sse.EventID {
	return sse.ID(f.EventID(i, ev))
}

func (f streamFeed) sharedFrame(i int, ev backend.Event) []byte {
	tag, pos, ok := f.Shared(i, ev)
	if !ok {
		return nil
	}
	return f.frames.frame(tag, f.Conversation(), pos, ev)
}

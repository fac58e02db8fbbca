package proxy

import (
	"bytes"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// goSSEFrame is what go-sse writes for ev as an event stream frames it: the reference that
// writeEventFrame must match byte for byte.
func goSSEFrame(id sse.EventID, ev backend.Event, retry time.Duration) []byte {
	msg := sse.Message{ID: id, Type: sse.Type(string(ev.Type))}
	msg.AppendData(string(ev.JSON))
	msg.Retry = retry
	var b bytes.Buffer
	_, _ = msg.WriteTo(&b)
	return b.Bytes()
}

// Every frame a stream writes is the frame go-sse writes for the same message: the ids of an
// execution's and of a log's streams, every retry hint, and data that go-sse would split
// across several data lines (stored JSON never holds a line break; if it did, the frame
// would still be go-sse's).
func TestEventFrameIsGoSSEs(t *testing.T) {
	delta := []byte(`{"data":{"text":"hi"},"executionId":"exec_1","id":"exec_1:12345","sequence":12345,"time":"2026-12-03T16:00:00.000Z","type":"output.text.delta"}`)
	for _, c := range []struct {
		name  string
		id    string
		typ   api.StandardEventType
		json  []byte
		retry time.Duration
	}{
		{"first event, retry hint", "1", api.StandardEventTypeRunQueued, delta, 250 * time.Millisecond},
		{"later event", "12345", api.StandardEventTypeOutputTextDelta, delta, 0},
		{"a log's cursor", "c1.Zm9vYmFy.42", api.StandardEventTypeRunCompleted, delta, 0},
		{"retry under a millisecond is not sent", "2", api.StandardEventTypeRunStarted, delta, 999 * time.Microsecond},
		{"retry in seconds", "3", api.StandardEventTypeRunStarted, delta, 90 * time.Second},
		{"a line feed in the data", "4", api.StandardEventTypeProviderEvent, []byte("{\"a\":\n1}"), 0},
		{"a carriage return and line feed", "5", api.StandardEventTypeProviderEvent, []byte("{\"a\":\r\n1}\r"), 0},
		{"a lone carriage return", "6", api.StandardEventTypeProviderEvent, []byte("{\"a\":\r1}"), 0},
		{"no data", "7", backend.StreamGapEventType, nil, 0},
	} {
		ev := backend.Event{Sequence: 1, Type: c.typ, JSON: c.json}
		var got bytes.Buffer
		writeEventFrame(&got, sse.ID(c.id), ev, c.retry)
		if want := goSSEFrame(sse.ID(c.id), ev, c.retry); !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s: framed\n%q\nwant go-sse's\n%q", c.name, got.Bytes(), want)
		}
	}
}

// Framing an event into a buffer with room allocates nothing: a live event is framed once per
// subscriber, and go-sse's message held its data in a slice of its own (an allocation per
// event per subscriber).
func TestEventFrameAllocatesNothing(t *testing.T) {
	ev := backend.Event{Sequence: 12345, Type: api.StandardEventTypeOutputTextDelta,
		JSON: []byte(`{"data":{"text":"hi"},"executionId":"exec_1","id":"exec_1:12345","sequence":12345,"time":"2026-12-03T16:00:00.000Z","type":"output.text.delta"}`)}
	id := sse.ID("12345")
	var b bytes.Buffer
	b.Grow(4096)
	allocs := testing.AllocsPerRun(100, func() {
		b.Reset()
		writeEventFrame(&b, id, ev, 250*time.Millisecond)
	})
	if allocs != 0 {
		t.Fatalf("framing an event allocated %.0f times; want none", allocs)
	}
}

func FuzzEventFrameIsGoSSEs(f *testing.F) {
	f.Add("1", "output.text.delta", []byte(`{"data":{}}`), int64(250))
	f.Add("c1.x.9", "run.completed", []byte("a\r\nb\rc\nd"), int64(0))
	f.Fuzz(func(t *testing.T, id, typ string, data []byte, retryMs int64) {
		eid, err := sse.NewID(id)
		if err != nil {
			return // not an id a stream gives
		}
		if _, err := sse.NewType(typ); err != nil {
			return
		}
		ev := backend.Event{Type: api.StandardEventType(typ), JSON: data}
		retry := time.Duration(retryMs%100_000) * time.Millisecond
		var got bytes.Buffer
		writeEventFrame(&got, eid, ev, retry)
		if want := goSSEFrame(eid, ev, retry); !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("framed %q, go-sse %q", got.Bytes(), want)
		}
	})
}

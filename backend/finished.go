package backend

import (
	"container/list"
	"encoding/json"
	"sync"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// finishedCacheBytes bounds the memory of recently finished executions kept for reads.
const finishedCacheBytes = 32 << 20

// finishedLogs keeps the record and the complete event log of recently finished executions,
// least recently used first out, within a byte budget. A finished execution is immutable, so
// its log can be served from memory: replays, late subscribers (a client that opens its stream
// after a fast execution already ended) and snapshots skip the store and its decoding. Entries
// are taken from the execution's hot window when it ends (only when the window still holds
// every event), after the terminal commit: nothing here was ever uncommitted. Retention removes
// an entry before it deletes the execution.
//
// The cache is most of a busy server's live heap, and every garbage collection marks what is
// live: an entry is therefore kept in a few pointer-free allocations (finishedLog), not as the
// record's strings, maps and slices and an object per event, which the collector would have
// to visit one by one (TestFinishedLogKeepsFewHeapObjectsPerExecution).
type finishedLogs struct {
	mu       sync.Mutex
	maxBytes int
	bytes    int
	byID     map[string]*list.Element // of *finishedLog
	lru      list.List                // front: most recently used
}

// finishedLog is one finished execution, shared by its readers and never modified.
type finishedLog struct {
	id, tenant, conversationID string
	// data is the store.Execution as JSON (decoded by snapshots), then the events' JSON back
	// to back, sequence 1 first: one allocation the collector does not scan.
	data  []byte
	spans []eventSpan // spans[0].end: where the record ends; spans[i]: where event i ends, its type
	size  int
}

// eventSpan locates one event in finishedLog.events. Pointer-free, so the spans of a log are
// one allocation the collector does not scan.
type eventSpan struct {
	end uint32
	typ uint8 // index in finishedEventTypes
}

// finishedEventTypes are the event types a cached log can hold; a log with any other type (none
// is written today) is left to the store.
var finishedEventTypes = []api.StandardEventType{
	api.StandardEventTypeActionRequired, api.StandardEventTypeActionResponded,
	api.StandardEventTypeArtifactCreated, api.StandardEventTypeOutputTextDelta,
	api.StandardEventTypeOutputTextDone, api.StandardEventTypeProviderEvent,
	api.StandardEventTypeRunCancelled, api.StandardEventTypeRunCompleted,
	api.StandardEventTypeRunFailed, api.StandardEventTypeRunQueued, api.StandardEventTypeRunStarted,
}

func finishedEventType(t api.StandardEventType) (uint8, bool) {
	for i, known := range finishedEventTypes {
		if known == t {
			return uint8(i), true
		}
	}
	return 0, false
}

func newFinishedLogs(maxBytes int) *finishedLogs {
	return &finishedLogs{maxBytes: maxBytes, byID: make(map[string]*list.Element)}
}

// finishedEntryOverhead approximates an entry's memory beyond its data and spans: the entry,
// its list element, its map slot and its strings.
const finishedEntryOverhead = 256

// add keeps the log of a finished execution. events must be its complete log.
func (c *finishedLogs) add(rec store.Execution, events []Event) {
	l, ok := newFinishedLog(rec, events, c.maxBytes/8)
	if !ok {
		return // the store serves it
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[l.id]; ok {
		c.removeLocked(el)
	}
	c.byID[l.id] = c.lru.PushFront(l)
	c.bytes += l.size
	for c.bytes > c.maxBytes {
		c.removeLocked(c.lru.Back())
	}
}

// newFinishedLog encodes an execution for the cache; false when it is larger than most bytes
// (one huge log would push out many small ones) or cannot be kept.
func newFinishedLog(rec store.Execution, events []Event, most int) (*finishedLog, bool) {
	n := 0
	for _, e := range events {
		n += len(e.JSON)
	}
	size := finishedEntryOverhead + n + (1+len(events))*8
	if size > most || uint64(n) > 1<<32-1 {
		return nil, false
	}
	spans := make([]eventSpan, 1+len(events))
	for i, e := range events {
		typ, ok := finishedEventType(e.Type)
		if !ok || e.Sequence != int64(i+1) {
			return nil, false
		}
		spans[1+i].typ = typ
	}
	record, err := json.Marshal(rec) // a record is made of JSON values (normalizeObject)
	if err != nil {
		return nil, false
	}
	size += len(record)
	if size > most || uint64(len(record)+n) > 1<<32-1 {
		return nil, false
	}
	data := append(make([]byte, 0, len(record)+n), record...)
	spans[0].end = uint32(len(data))
	for i, e := range events {
		data = append(data, e.JSON...)
		spans[1+i].end = uint32(len(data))
	}
	return &finishedLog{
		id: rec.Execution.ID, tenant: rec.Tenant, conversationID: rec.Execution.ConversationID,
		data: data, spans: spans, size: size,
	}, true
}

func (c *finishedLogs) get(id string) (*finishedLog, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[id]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*finishedLog), true
}

func (c *finishedLogs) remove(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[id]; ok {
		c.removeLocked(el)
	}
}

// removeConversation removes the logs of conversation id's executions (its erasure).
func (c *finishedLogs) removeConversation(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.lru.Front(); el != nil; {
		next := el.Next()
		if el.Value.(*finishedLog).conversationID == id {
			c.removeLocked(el)
		}
		el = next
	}
}

func (c *finishedLogs) removeLocked(el *list.Element) {
	l := c.lru.Remove(el).(*finishedLog)
	delete(c.byID, l.id)
	c.bytes -= l.size
}

// execution decodes the record: a private copy, as a snapshot must be.
func (l *finishedLog) execution() (api.Execution, error) {
	var rec store.Execution
	if err := json.Unmarshal(l.data[:l.spans[0].end], &rec); err != nil {
		return api.Execution{}, internalError("decode cached execution", err)
	}
	e := rec.Execution
	if e.RequiredCapabilities == nil { // as cloneExecution answers
		e.RequiredCapabilities = []string{}
	}
	if e.EffectiveConfig == nil {
		e.EffectiveConfig = api.JSONObject{}
	}
	return e, nil
}

// lastSequence is the sequence of the terminal event.
func (l *finishedLog) lastSequence() int64 { return int64(len(l.spans) - 1) }

// after returns up to limit events with sequence > after (limit <= 0: all), sharing the JSON.
func (l *finishedLog) after(after int64, limit int) []Event {
	last := l.lastSequence()
	if after >= last {
		return nil
	}
	from := max(after, 0)
	to := last
	if limit > 0 && from+int64(limit) < to {
		to = from + int64(limit)
	}
	out := make([]Event, to-from)
	start := l.spans[from].end // where event from+1 begins
	for i := range out {
		seq := from + int64(i) + 1
		s := l.spans[seq]
		out[i] = Event{Sequence: seq, Type: finishedEventTypes[s.typ], JSON: l.data[start:s.end:s.end]}
		start = s.end
	}
	return out
}

package backend

import (
	"container/list"
	"sync"

	"github.com/harness-edge/harness-edge/backend/store"
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
type finishedLogs struct {
	mu       sync.Mutex
	maxBytes int
	bytes    int
	byID     map[string]*list.Element // of *finishedLog
	lru      list.List                // front: most recently used
}

type finishedLog struct {
	rec    store.Execution
	events []Event // sequences 1..len(events), the terminal event last; shared, never modified
	size   int
}

func newFinishedLogs(maxBytes int) *finishedLogs {
	return &finishedLogs{maxBytes: maxBytes, byID: make(map[string]*list.Element)}
}

// eventOverhead approximates the memory of an Event beyond its JSON.
const eventOverhead = 48

// add keeps the log of a finished execution. events must be its complete log.
func (c *finishedLogs) add(rec store.Execution, events []Event) {
	size := 512
	for _, e := range events {
		size += len(e.JSON) + eventOverhead
	}
	if size > c.maxBytes/8 {
		return // one huge log would push out many small ones; the store serves it
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	id := rec.Execution.ID
	if el, ok := c.byID[id]; ok {
		c.removeLocked(el)
	}
	c.byID[id] = c.lru.PushFront(&finishedLog{rec: rec, events: events, size: size})
	c.bytes += size
	for c.bytes > c.maxBytes {
		c.removeLocked(c.lru.Back())
	}
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
		if el.Value.(*finishedLog).rec.Execution.ConversationID == id {
			c.removeLocked(el)
		}
		el = next
	}
}

func (c *finishedLogs) removeLocked(el *list.Element) {
	l := c.lru.Remove(el).(*finishedLog)
	delete(c.byID, l.rec.Execution.ID)
	c.bytes -= l.size
}

// after returns up to limit events with sequence > after (limit <= 0: all), sharing the JSON.
func (l *finishedLog) after(after int64, limit int) []Event {
	if after >= int64(len(l.events)) {
		return nil
	}
	from := int(max(after, 0))
	to := len(l.events)
	if limit > 0 && from+limit < to {
		to = from + limit
	}
	return append([]Event(nil), l.events[from:to]...)
}

package main

import "sync"

// recentFrames keeps the frames of the most recent executions started with a 202, for the
// stream that follows (as harness-edge serves a just-finished execution's events from memory).
// Bounded: the oldest go first, and their streams read the store.
type recentFrames struct {
	mu     sync.Mutex
	frames map[string][]byte
	order  []string // a ring of the ids in frames, oldest at next
	next   int
}

// maxRecent bounds recentFrames: far more than the executions in flight under the load tool.
const maxRecent = 4096

func (c *recentFrames) add(id string, frames []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frames == nil {
		c.frames = make(map[string][]byte, maxRecent)
		c.order = make([]string, maxRecent)
	}
	if old := c.order[c.next]; old != "" {
		delete(c.frames, old)
	}
	c.order[c.next] = id
	c.next = (c.next + 1) % maxRecent
	c.frames[id] = frames
}

func (c *recentFrames) get(id string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.frames[id]
	return f, ok
}

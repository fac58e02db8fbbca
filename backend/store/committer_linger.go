package store

import "time"

// The linger of the group commit (CommitterOptions.Linger). Without it a group is whatever
// queued while the previous transaction synced: with many live executions each emitting a
// delta every few tens of milliseconds, that is a handful of events per commit, and the
// commit's fixed cost (bbolt rewriting the touched pages and syncing twice, or a database
// round trip) is paid for every handful. Waiting a bounded time from a group's first request
// gathers the events of many executions into one transaction; an event is still sent, and a
// start, an action or a terminal event still acknowledged, only once its group is durable.
//
// The wait applies only while writers are concurrent — when the previous group held more than
// one request — so a lone writer never waits for it (its groups hold one request each). A full
// queue (MaxQueued or MaxQueuedBytes) or Close ends the wait at once.

// lingerLocked waits, with c.mu held on entry and on return (released meanwhile), until the
// queue's first request has waited c.linger, unless the queue fills, Close begins, or the
// previous group held a single request.
func (c *Committer) lingerLocked() {
	if c.linger <= 0 || c.lastGroup <= 1 {
		return
	}
	for len(c.queue) > 0 && !c.closed && !c.fullLocked() {
		wait := time.Until(c.firstAt.Add(c.linger))
		if wait <= 0 {
			return
		}
		if c.timer == nil {
			c.timer = time.NewTimer(wait)
		} else {
			c.timer.Reset(wait)
		}
		c.mu.Unlock()
		select {
		case <-c.timer.C:
		case <-c.wake: // the queue filled, or Close began (or a stale signal: look again)
		}
		c.timer.Stop()
		c.mu.Lock()
	}
}

// fullLocked reports whether the queue holds as much as it may (the bounds of Submit).
func (c *Committer) fullLocked() bool {
	return len(c.queue) >= c.max || c.queued >= c.maxSize
}

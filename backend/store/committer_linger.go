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
// The wait applies only while writers are concurrent, so a lone writer never waits for it: a
// lone writer's groups hold one request each, and after loneGroupsBeforeNoLinger such groups in
// a row the committer stops lingering until a group holds more than one again. One group of one
// request is not enough to stop: amid many writers a linger sometimes gathers nothing else (the
// arrivals of live executions come in clumps), and when that stopped the next linger, the next
// group was taken the moment its first request arrived — one event again — and so on: a run of
// commits of one event each that only a burst during a sync could end. Under the live phase
// (64 executions streaming deltas) a fifth of the commits were such, about 18 events per
// commit where the live floor, which always lingers, gathered 27. A full queue (MaxQueued or
// MaxQueuedBytes) or Close ends the wait at once.

// loneGroupsBeforeNoLinger is how many groups of one request in a row show a lone writer. A
// writer that becomes alone after concurrent ones pays the linger this many times, once.
const loneGroupsBeforeNoLinger = 4

// noteGroupSize records the size of the group the loop took, for the linger's test of
// concurrency. With c.mu held.
func (c *Committer) noteGroupSize(n int) {
	if n == 1 {
		c.loneRun = min(c.loneRun+1, loneGroupsBeforeNoLinger)
	} else {
		c.loneRun = 0
	}
}

// lingerLocked waits, with c.mu held on entry and on return (released meanwhile), until the
// queue's first request has waited c.linger, unless the queue fills, Close begins, or the
// writer is alone (the last loneGroupsBeforeNoLinger groups held one request each).
func (c *Committer) lingerLocked() {
	if c.linger <= 0 || c.loneRun >= loneGroupsBeforeNoLinger {
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

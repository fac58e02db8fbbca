package backend

// Publication: what readers and subscribers of a live execution see, updated only once a
// change is durable, and the hot window of recent events they read from memory. The view
// itself is publishedView (published.go); here what the execution adds to it: reads past the
// hot window, from the store, and leaving it with the span ended.

// readLive returns up to limit published events after the cursor: from memory when they are
// still hot, else from the store (anything older than the hot window was committed long ago).
func (x *execution) readLive(after int64, limit int) ([]Event, error) {
	x.mu.RLock()
	events, fromStore := x.log.Read(after, limit)
	x.mu.RUnlock()
	if fromStore == 0 {
		return events, nil
	}
	// Only up to what was published: the store may already hold a commit still being published.
	return x.rt.readStored(x.id, after, fromStore)
}

// closeSubscriptions wakes every subscriber for the last time; their next Read reports why
// this process left the execution (ErrClosed on Close; UNAVAILABLE when fenced: another node
// serves it, and a client resumes there).
func (x *execution) closeSubscriptions(why error) {
	x.endSpanLeft() // this process leaves the execution: its span so far is exported
	x.leave(why)
}

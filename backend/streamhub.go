package backend

import (
	"fmt"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/streams"
)

// The conversation and tenant streams are a room of their own, package backend/streams; the
// runtime only opens its hub over the store's log, with the store's wake-ups on a shared
// store, and closes it (docs/architecture.md).

// openStreamHub makes the hub when the store keeps a stream log (store.StreamLog); the streams
// are opened with OpenStream (stream.go).
func openStreamHub(r *Runtime, st store.Store) error {
	log, ok := st.(store.StreamLog)
	if !ok {
		return nil
	}
	opts := streams.Options{Retention: r.opts.streamLogRetention(), OnError: func(err error) {
		r.storeErrors.Error("stream log: reading other nodes' commits or trimming failed", err)
	}, OnErased: r.forgetErased} // a deleted conversation, this node's or another's (conversationeraser.go)
	if c, ok := st.(store.Cluster); ok {
		opts.Watch = c.Watch
	}
	// A node that can no longer vouch for its cluster lease ends its streams (docs/scale-out.md):
	// these follow the same signal as its execution streams, when the cluster offers it.
	if l, ok := r.cluster.(interface{ Lapsed() <-chan struct{} }); ok {
		opts.Lapsed = l.Lapsed
	}
	hub, err := streams.New(log, opts)
	if err != nil {
		return fmt.Errorf("backend: open the stream log: %w", err)
	}
	r.streams = hub
	return nil
}

// StreamHub is rt's hub of the conversation and tenant streams, for the tests and tools that
// look at the hub itself (the cluster's streams tests); nil when the store keeps no stream log.
// A server opens streams with OpenStream.
func StreamHub(rt *Runtime) *streams.Hub { return rt.streams }

// streamLogRetention is how long the stream log keeps its entries: StreamLogRetention, never
// longer than Retention (past it the events it names are deleted); 0: forever.
func (o Options) streamLogRetention() time.Duration {
	switch {
	case o.StreamLogRetention > 0 && o.Retention > 0:
		return min(o.StreamLogRetention, o.Retention)
	case o.StreamLogRetention > 0:
		return o.StreamLogRetention
	default:
		return o.Retention
	}
}

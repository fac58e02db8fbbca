package store

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Default bounds on what waits for the next group commit (see CommitterOptions).
const (
	DefaultMaxQueued      = 16384
	DefaultMaxQueuedBytes = 64 << 20
)

// CommitterOptions tune a Committer; zero values take the defaults.
type CommitterOptions struct {
	// MaxQueued and MaxQueuedBytes bound what waits for the next group commit (requests, and
	// Batch.Size of their batches). A writer that finds the queue full waits for the commit in
	// flight to take it: back-pressure on a provider emitting faster than the store commits,
	// and a bound on the memory queued. An empty queue takes any batch, however big.
	MaxQueued      int
	MaxQueuedBytes int
	// Linger, when > 0, is how long a group commit waits, from its first request's arrival, for
	// more requests to join it, while writers are concurrent (see committer_linger.go).
	Linger time.Duration
	// Observe, when set, is told how long each transaction (each call of apply) took.
	Observe func(time.Duration)
	// Transient, when set, reports the errors of apply that say nothing about the batches (the
	// database could not be reached, or did not answer in time). Such a group is tried again,
	// with backoff, instead of failing: a stalled database pauses the executions that write,
	// it does not fail them. Requests whose Deadline passes meanwhile leave the group with
	// ErrUnavailable; retries stop once Close has begun (what is left fails then).
	Transient func(error) bool
	// LogRetry, when set, is told of a group's transient failures: its first, then every
	// attempt whose number is a power of two (a stall of minutes logs a handful of lines),
	// so that a group that keeps failing is visible in the logs, not only as requests that wait.
	LogRetry func(err error, attempt, requests int)
}

// Backoff of the retries of a transient failure.
const (
	transientRetryMin = 50 * time.Millisecond
	transientRetryMax = time.Second
)

// Committer is the group commit shared by store implementations: a queue of Requests and one
// goroutine that commits everything queued while the previous transaction (and its fsync) was
// in flight as the next transaction — and, with a Linger, what concurrent writers queue within
// it (committer_linger.go). Throughput grows with the number of writers instead of falling to
// one sync per change, and a lone writer never waits for a batching timer.
//
// The implementation supplies apply, which writes the given requests' batches in ONE
// transaction, in order, and returns nil only once it is durable; on error nothing of it may
// be applied. The Committer owns the rest of the contract's commit semantics:
//   - requests of a failed Chain are never applied: they fail with the chain's error;
//   - one bad batch must not fail its neighbours: when a group of several fails, each request
//     is retried alone, in order (so an ErrConflict reaches only the batch that caused it);
//   - Done is called in submission order, on the commit goroutine;
//   - Close refuses new requests (ErrClosed) and returns once everything queued before it is
//     committed.
type Committer struct {
	apply     func(group []*Request) error
	observe   func(time.Duration)
	transient func(error) bool
	logRetry  func(err error, attempt, requests int)
	max       int
	maxSize   int
	linger    time.Duration

	mu       sync.Mutex
	notFull  sync.Cond // signalled when the loop takes the queue
	queue    []*Request
	queued   int        // approximate bytes of the queued batches
	spare    []*Request // the previous group's slice, reused
	closed   bool
	firstAt  time.Time     // when the first request of the queue was submitted (with a linger)
	loneRun  int           // groups in a row of one request each, up to loneGroupsBeforeNoLinger
	timer    *time.Timer   // the linger's, reused by the commit goroutine
	wake     chan struct{} // capacity 1: something was queued, the queue filled, or Close began
	closing  chan struct{} // closed by Close: transient retries stop
	loopDone chan struct{}
}

// NewCommitter starts the commit goroutine; Close ends it.
func NewCommitter(apply func(group []*Request) error, opts CommitterOptions) *Committer {
	if opts.MaxQueued <= 0 {
		opts.MaxQueued = DefaultMaxQueued
	}
	if opts.MaxQueuedBytes <= 0 {
		opts.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
	if opts.Observe == nil {
		opts.Observe = func(time.Duration) {}
	}
	if opts.Transient == nil {
		opts.Transient = func(error) bool { return false }
	}
	if opts.LogRetry == nil {
		opts.LogRetry = func(error, int, int) {}
	}
	c := &Committer{
		apply:     apply,
		observe:   opts.Observe,
		transient: opts.Transient,
		logRetry:  opts.LogRetry,
		closing:   make(chan struct{}),
		max:       opts.MaxQueued,
		maxSize:   opts.MaxQueuedBytes,
		linger:    opts.Linger,
		loneRun:   loneGroupsBeforeNoLinger, // no history yet: a lone writer until shown otherwise
		wake:      make(chan struct{}, 1),
		loopDone:  make(chan struct{}),
	}
	c.notFull.L = &c.mu
	go c.loop()
	return c
}

// Commit submits b and waits for its outcome. An empty batch commits nothing and succeeds.
func (c *Committer) Commit(b *Batch) error {
	if b.Empty() {
		return nil
	}
	done := make(chan error, 1)
	if err := c.Submit(&Request{Batch: b, Done: func(err error) { done <- err }}); err != nil {
		return err
	}
	return <-done
}

// Submit queues req and returns without waiting for its commit, unless the queue is full
// (then it waits for room). ErrClosed once Close has begun.
func (c *Committer) Submit(req *Request) error {
	size := req.Batch.Size()
	c.mu.Lock()
	for len(c.queue) > 0 && (len(c.queue) >= c.max || c.queued+size > c.maxSize) && !c.closed {
		c.notFull.Wait()
	}
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	if len(c.queue) == 0 && c.linger > 0 {
		c.firstAt = time.Now()
	}
	c.queue = append(c.queue, req)
	c.queued += size
	// With a linger the loop needs waking only for the first request and for a full queue;
	// without one, every Submit wakes it (a cheap non-blocking send).
	signal := c.linger <= 0 || len(c.queue) == 1 || c.fullLocked()
	c.mu.Unlock()
	if !req.Deadline.IsZero() {
		// A request still queued at its deadline (the transaction in flight is stuck on a
		// stalled database) is taken out and failed there and then; one that the loop took is
		// bounded by the loop (commitRetrying, and the store's transaction deadline).
		time.AfterFunc(time.Until(req.Deadline), func() { c.expire(req, size) })
	}
	if signal {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// expire fails req with ErrUnavailable if it is still queued.
func (c *Committer) expire(req *Request, size int) {
	c.mu.Lock()
	i := slices.Index(c.queue, req)
	if i < 0 {
		c.mu.Unlock()
		return
	}
	c.queue = slices.Delete(c.queue, i, i+1)
	c.queued -= size
	c.notFull.Broadcast()
	c.mu.Unlock()
	req.finish(fmt.Errorf("not applied within its deadline: %w", ErrUnavailable))
}

// Close refuses new requests, waits until everything queued is committed, and returns. The
// store closes its database after it. Safe to call more than once.
func (c *Committer) Close() {
	c.mu.Lock()
	if !c.closed {
		close(c.closing)
	}
	c.closed = true
	c.notFull.Broadcast()
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	<-c.loopDone
}

// loop takes everything queued, commits it as one transaction, reports each request, and
// starts over. After Close it drains what was queued before, then ends.
func (c *Committer) loop() {
	defer close(c.loopDone)
	for {
		c.mu.Lock()
		for len(c.queue) == 0 && !c.closed {
			c.mu.Unlock()
			<-c.wake
			c.mu.Lock()
		}
		c.lingerLocked()
		if len(c.queue) == 0 {
			if c.closed { // closed and drained
				c.mu.Unlock()
				return
			}
			c.mu.Unlock() // the linger's requests expired meanwhile
			continue
		}
		group := c.queue
		c.noteGroupSize(len(group))
		c.queue, c.spare = c.spare[:0], nil
		c.queued = 0
		c.notFull.Broadcast()
		c.mu.Unlock()

		c.commitGroup(group)

		clear(group) // drop the batches, so they can be collected while the slice is reused
		c.mu.Lock()
		if c.spare == nil && cap(group) <= 4*c.max {
			c.spare = group[:0]
		}
		c.mu.Unlock()
	}
}

// transaction runs apply once and reports its duration.
func (c *Committer) transaction(group []*Request) error {
	start := time.Now()
	err := c.apply(group)
	c.observe(time.Since(start))
	return err
}

func (c *Committer) commitGroup(group []*Request) {
	err := c.commitRetrying(group)
	if err != nil && c.countHealthy(group) > 1 {
		// One bad batch must not fail its neighbours: retry each on its own, in order. A
		// request whose chain failed earlier in this retry fails without being applied.
		for _, req := range group {
			if req.done {
				continue
			}
			if cerr := req.Chain.Err(); cerr != nil {
				req.finish(cerr)
				continue
			}
			req.finish(c.commitRetrying([]*Request{req}))
		}
		return
	}
	for _, req := range group {
		if req.done {
			continue
		}
		if cerr := req.Chain.Err(); cerr != nil {
			req.finish(cerr)
			continue
		}
		req.finish(err)
	}
}

// countHealthy counts the requests of group still to be applied.
func (c *Committer) countHealthy(group []*Request) int {
	n := 0
	for _, req := range group {
		if !req.done && req.Chain.Err() == nil {
			n++
		}
	}
	return n
}

// commitRetrying applies the healthy requests of group in one transaction, trying again while
// it fails transiently (see CommitterOptions.Transient). Requests whose deadline passes are
// finished with ErrUnavailable on the way and leave the group; nil when nothing is left.
func (c *Committer) commitRetrying(group []*Request) error {
	backoff := transientRetryMin
	healthy := make([]*Request, 0, len(group))
	for attempt := 1; ; attempt++ {
		healthy = healthy[:0]
		now := time.Now()
		for _, req := range group {
			switch {
			case req.done || req.Chain.Err() != nil:
			case req.expired(now):
				req.finish(fmt.Errorf("not applied within its deadline: %w", ErrUnavailable))
			default:
				healthy = append(healthy, req)
			}
		}
		if len(healthy) == 0 {
			return nil
		}
		err := c.transaction(healthy)
		if err == nil || !c.transient(err) {
			return err
		}
		if attempt&(attempt-1) == 0 {
			c.logRetry(err, attempt, len(healthy))
		}
		unknown := errors.Is(err, ErrOutcomeUnknown)
		for _, req := range healthy {
			req.Attempts++
			req.maybeApplied = req.maybeApplied || unknown
		}
		select {
		case <-c.closing:
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, transientRetryMax)
	}
}

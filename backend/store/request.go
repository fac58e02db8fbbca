package store

import (
	"sync/atomic"
	"time"
)

// Request is one batch submitted for a group commit (Store.Submit).
type Request struct {
	Batch *Batch
	// Chain, when set, orders this batch after earlier batches of the same chain (one
	// execution's): once a batch of the chain failed, every later one fails with the same
	// error without being applied, so a failed append can never leave a gap in the sequences,
	// and what the chain committed before the failure is exactly what its Done callbacks
	// published.
	Chain *Chain
	// Done is called on the store's commit goroutine, in submission order, once the batch is
	// durable (nil) or failed. It must be quick and must not submit.
	Done func(error)
	// Settler, when set, is told instead of Done, under the same rules: a submitter that keeps
	// what it needs beside the request (a struct holding both) is then told without a closure
	// made per request — an allocation per live event (backend/commit.go's submissions).
	Settler Settler
	// Deadline, when set, bounds how long the request may wait to be applied: a request still
	// unapplied then (a stalled database) fails with ErrUnavailable, and nothing of it is ever
	// applied. Starts set it, so a client is answered in bounded time and the execution it was
	// refused never runs. Such a failure may be reported before requests submitted earlier
	// (and not on the commit goroutine): the request's chain fails all the same, so the later
	// requests of its chain are never applied. Once a transaction that held the request ended
	// with ErrOutcomeUnknown (it may have been applied), the deadline no longer holds: the
	// request is retried until the store answers, since "never applied" may be untrue.
	Deadline time.Time

	// Attempts counts the transactions that held the request and failed for a reason worth a
	// retry (CommitterOptions.Transient; set by the Committer). One of them may have been
	// applied without the store learning of it (a connection lost during COMMIT), so an apply
	// function that sees Attempts > 0 makes its inserts tolerate the rows the request itself
	// wrote, and only those.
	Attempts int

	done bool // finished (Done called)
	// maybeApplied: a transaction that held it ended with ErrOutcomeUnknown. Its deadline no
	// longer applies: failing it as never applied could deny an execution that exists.
	maybeApplied bool
}

// ApplyBy is the deadline that still holds for req: its Deadline, or zero (none) once a
// transaction that held it may have been applied (see maybeApplied). A store bounds the
// transaction that carries req by it; bounding it by the Deadline itself would make every
// retry of such a request fail at once, and the Committer would retry it for ever.
func (req *Request) ApplyBy() time.Time {
	if req.maybeApplied {
		return time.Time{}
	}
	return req.Deadline
}

// expired reports whether req's deadline passed (and still may: see ApplyBy).
func (req *Request) expired(now time.Time) bool {
	by := req.ApplyBy()
	return !by.IsZero() && now.After(by)
}

// Chain is the failure domain of one execution's batches. The zero value is a healthy chain.
type Chain struct {
	failed atomic.Pointer[error]
}

// Err is the error that failed the chain, nil while it is healthy (and for a nil chain).
func (c *Chain) Err() error {
	if c == nil {
		return nil
	}
	if p := c.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// finish reports err to req and, on failure, fails its chain (the first error stays).
func (req *Request) finish(err error) {
	req.done = true
	if err != nil && req.Chain != nil {
		failed := err // declared here, so that only a failure moves it to the heap
		req.Chain.failed.CompareAndSwap(nil, &failed)
	}
	if req.Settler != nil {
		req.Settler.Settled(err)
		return
	}
	req.Done(err)
}

// Settler is told a request's outcome (Request.Settler).
type Settler interface {
	Settled(err error)
}

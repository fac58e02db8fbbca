package store

import "sync/atomic"

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
	if err != nil && req.Chain != nil {
		req.Chain.failed.CompareAndSwap(nil, &err)
	}
	req.Done(err)
}

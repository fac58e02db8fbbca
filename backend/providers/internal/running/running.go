// Package running is the table a provider that relays to a peer (an upstream runtime, an A2A
// agent) keeps of its running executions, for its Cancel hook: what the run learnt of its
// counterpart at the peer (the upstream execution, the A2A task) is known only once the start
// reached the peer, and Cancel, which the runtime calls after cancelling the run's context, may
// have to wait for it.
package running

import (
	"context"
	"sync"
)

// Entry is one running execution. Its value is set once, by Started.
type Entry[T any] struct {
	known chan struct{}
	value T
	once  sync.Once
}

// Started records what the run learnt of its counterpart (the zero value: it has none and never
// will); only the first call counts.
func (e *Entry[T]) Started(v T) {
	e.once.Do(func() {
		e.value = v
		close(e.known)
	})
}

// Known is closed once Started was called.
func (e *Entry[T]) Known() <-chan struct{} { return e.known }

// Value is what Started recorded; read it after Known is closed.
func (e *Entry[T]) Value() T { return e.value }

// Table is a provider's running executions by execution id. The zero value is ready to use.
type Table[T any] struct {
	mu sync.Mutex
	m  map[string]*Entry[T]
}

// Register adds execution id; false when it is already running here.
func (t *Table[T]) Register(id string) (*Entry[T], bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, running := t.m[id]; running {
		return nil, false
	}
	if t.m == nil {
		t.m = make(map[string]*Entry[T])
	}
	e := &Entry[T]{known: make(chan struct{})}
	t.m[id] = e
	return e, true
}

// Unregister forgets a run that ended (marking it started, with nothing, if it never was),
// unless its context was cancelled: then the runtime's Cancel hook follows and needs the entry;
// Take removes it.
func (t *Table[T]) Unregister(ctx context.Context, id string, e *Entry[T]) {
	var none T
	e.Started(none)
	if ctx.Err() != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[id] == e {
		delete(t.m, id)
	}
}

// Take removes execution id and returns its entry, nil when it never ran here.
func (t *Table[T]) Take(id string) *Entry[T] {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[id]
	delete(t.m, id)
	return e
}

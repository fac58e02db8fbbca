package acp

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// pool keeps each conversation's agent process warm between the conversation's executions, on
// this node, for one provider instance (docs/acp.md "Conversations"). It is bounded twice: a
// warm process is ended after idle_timeout, and the provider never runs more than
// max_processes agent processes at once, warm and busy together — at the bound the least
// recently used warm one is ended to make room, and when none is warm a new process waits for a
// slot. Close ends every warm process and makes every busy one end with its turn, so a reload
// or a shutdown leaves none behind.
type pool struct {
	max  int
	idle time.Duration

	mu     sync.Mutex
	count  int                     // processes alive or reserved for a spawn
	warm   map[string]*warmProcess // by conversation
	lru    list.List               // of *warmProcess, least recently used first
	closed bool
	freed  chan struct{} // closed and replaced when count drops, a process turns warm, or the pool closes

	background sync.WaitGroup // idle watchers and evictions
}

// warmProcess is one conversation's process waiting for the conversation's next turn.
type warmProcess struct {
	conversation string
	s            *session
	elem         *list.Element
	taken        chan struct{} // closed when it leaves the pool (taken, evicted, closed)
}

func newPool(max int, idle time.Duration) *pool {
	return &pool{max: max, idle: idle, warm: make(map[string]*warmProcess), freed: make(chan struct{})}
}

// take removes the conversation's warm process from the pool and returns it (nil: none). It
// stays counted: it is busy now.
func (p *pool) take(conversation string) *session {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.warm[conversation]
	if w == nil {
		return nil
	}
	p.removeLocked(w)
	return w.s
}

// checkin keeps s warm for its conversation's next turn, or ends it if the pool is closed.
func (p *pool) checkin(conversation string, s *session) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = p.retire(s)
		return
	}
	if old := p.warm[conversation]; old != nil {
		// Two processes for one conversation (turns on two provider instances across a
		// reload): the newer one is the one to keep.
		p.removeLocked(old)
		p.retireInBackground(old.s)
	}
	w := &warmProcess{conversation: conversation, s: s, taken: make(chan struct{})}
	w.elem = p.lru.PushBack(w)
	p.warm[conversation] = w
	p.background.Add(1)
	p.wakeLocked() // one waiting for room may end this one now
	p.mu.Unlock()
	go p.watch(w)
}

// watch ends a warm process when it has been idle for the idle timeout, or as soon as it dies
// or breaks while waiting, unless it leaves the pool first.
func (p *pool) watch(w *warmProcess) {
	defer p.background.Done()
	timer := time.NewTimer(p.idle)
	defer timer.Stop()
	select {
	case <-w.taken:
		return
	case <-timer.C:
	case <-w.s.exited():
	case <-w.s.broken:
	}
	p.mu.Lock()
	if p.warm[w.conversation] != w {
		p.mu.Unlock()
		return // taken meanwhile
	}
	p.removeLocked(w)
	p.mu.Unlock()
	_ = p.retire(w.s)
}

// reserve counts a process about to be spawned, once there is room: at the bound it ends the
// least recently used warm process and waits for it to go; with none warm it tells the caller
// (waiting, once) and waits for a process to end or turn warm, or for ctx.
func (p *pool) reserve(ctx context.Context, waiting func()) error {
	told := false
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return errPoolClosed
		}
		if p.count < p.max {
			p.count++
			p.mu.Unlock()
			return nil
		}
		freed, tell := p.freed, false
		if front := p.lru.Front(); front != nil {
			w := front.Value.(*warmProcess)
			p.removeLocked(w)
			p.retireInBackground(w.s)
		} else if !told {
			told, tell = true, true
		}
		p.mu.Unlock()
		if tell {
			waiting()
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// retire tears s down (teardown.go) and counts it out, once, returning teardown's result. Every
// session made after a reserve ends here, spawned or not.
func (p *pool) retire(s *session) error {
	err := s.shutdown()
	if s.retired.CompareAndSwap(false, true) {
		p.mu.Lock()
		p.count--
		p.wakeLocked()
		p.mu.Unlock()
	}
	return err
}

// retireInBackground retires s on a goroutine that close waits for. The caller holds p.mu.
func (p *pool) retireInBackground(s *session) {
	p.background.Add(1)
	go func() {
		defer p.background.Done()
		_ = p.retire(s)
	}()
}

// close ends every warm process and waits until they are gone; processes busy with a turn end
// when their turn does (checkin), and waits for room end with errPoolClosed.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	for p.lru.Len() > 0 {
		w := p.lru.Front().Value.(*warmProcess)
		p.removeLocked(w)
		p.retireInBackground(w.s)
	}
	p.wakeLocked()
	p.mu.Unlock()
	p.background.Wait()
}

func (p *pool) removeLocked(w *warmProcess) {
	delete(p.warm, w.conversation)
	p.lru.Remove(w.elem)
	close(w.taken)
}

func (p *pool) wakeLocked() {
	close(p.freed)
	p.freed = make(chan struct{})
}

// lanes make the executions of one conversation take turns on its session: an ACP session is
// one thread of the agent, prompted once at a time. Whatever the conversation's busy policy
// lets run at once, two executions of one conversation on one provider here run one after the
// other, the second told so (turn.waiting).
type lanes struct {
	mu    sync.Mutex
	byKey map[string]*lane
}

type lane struct {
	token  chan struct{} // capacity 1: held by the execution whose turn it is
	holder string        // that execution's id
	users  int           // holders and waiters: the lane goes when the last leaves
}

// conversationLanes are process-wide rather than per Provider: a reload builds a new Provider
// while the old one's executions still run, and a conversation's turns must not overlap across
// the two. The key holds the provider id: two agents' sessions are two threads.
var conversationLanes = &lanes{byKey: make(map[string]*lane)}

func laneKey(providerID, conversation string) string { return providerID + "\x00" + conversation }

// take waits for the lane's turn (telling waiting, once, who has it) until ctx ends, and
// returns the release.
func (l *lanes) take(ctx context.Context, key, executionID string, waiting func(holder string)) (release func(), err error) {
	l.mu.Lock()
	ln := l.byKey[key]
	if ln == nil {
		ln = &lane{token: make(chan struct{}, 1)}
		l.byKey[key] = ln
	}
	ln.users++
	l.mu.Unlock()

	select {
	case ln.token <- struct{}{}:
	default:
		l.mu.Lock()
		holder := ln.holder
		l.mu.Unlock()
		waiting(holder)
		select {
		case ln.token <- struct{}{}:
		case <-ctx.Done():
			l.leave(key, ln)
			return nil, ctx.Err()
		}
	}
	l.mu.Lock()
	ln.holder = executionID
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		ln.holder = ""
		l.mu.Unlock()
		<-ln.token
		l.leave(key, ln)
	}, nil
}

func (l *lanes) leave(key string, ln *lane) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln.users--
	if ln.users == 0 {
		delete(l.byKey, key)
	}
}

// busy reports whether an execution holds or waits for the lane.
func (l *lanes) busy(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byKey[key] != nil
}

package cluster

import (
	"strconv"
	"sync"
	"time"
)

// wakeups is how a node waits for another one: a key (an execution's log, a command's answer,
// this node's command queue) → a channel closed and replaced whenever a Watch notice names the
// key, and at the latest every poll interval. Notices can be missed (a dropped connection, a
// full queue): every waiter re-reads the store when woken, so a missed notice only delays it by
// one poll interval, never loses anything.
//
// Waiters take a reference to a key while they wait (acquire) and hand it back when done; a key
// nobody waits for is forgotten, so notices about it cost a map lookup.
type wakeups struct {
	mu    sync.Mutex
	byKey map[string]*wakeEntry
}

type wakeEntry struct {
	ch    chan struct{}
	refs  int
	woken time.Time // the last close of ch, for the poll: only quiet keys are polled
}

func newWakeups() *wakeups { return &wakeups{byKey: make(map[string]*wakeEntry)} }

// Keys of the wakeups registry.
func executionWakeKey(executionID string) string { return "x:" + executionID }
func commandWakeKey(id int64) string             { return "c:" + strconv.FormatInt(id, 10) }

const commandQueueWakeKey = "commands"

// acquire registers interest in key until release is called (exactly once).
func (w *wakeups) acquire(key string) (release func()) {
	w.mu.Lock()
	e := w.byKey[key]
	if e == nil {
		e = &wakeEntry{ch: make(chan struct{}), woken: time.Now()}
		w.byKey[key] = e
	}
	e.refs++
	w.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if e.refs--; e.refs == 0 && w.byKey[key] == e {
				delete(w.byKey, key)
			}
		})
	}
}

// channel returns the channel closed at the next wake-up of key. Take it BEFORE reading the
// store, so a wake-up between the read and the wait is not lost. A key nobody acquired gets a
// closed channel (the caller re-reads at once rather than waiting forever).
func (w *wakeups) channel(key string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.byKey[key]; e != nil {
		return e.ch
	}
	return closed
}

// closed is a channel that is always closed.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// wake wakes every waiter of key; a no-op when nobody waits.
func (w *wakeups) wake(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.byKey[key]; e != nil {
		e.wakeLocked(time.Now())
	}
}

func (e *wakeEntry) wakeLocked(at time.Time) {
	close(e.ch)
	e.ch = make(chan struct{})
	e.woken = at
}

// wakeQuiet wakes every key not woken for interval: the fallback for missed notices.
func (w *wakeups) wakeQuiet(interval time.Duration) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.byKey {
		if now.Sub(e.woken) >= interval {
			e.wakeLocked(now)
		}
	}
}

// wakeAll wakes every key (the runtime closes: waiters see it on their next check).
func (w *wakeups) wakeAll() {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.byKey {
		e.wakeLocked(now)
	}
}

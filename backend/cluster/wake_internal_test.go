package cluster

import (
	"testing"
	"time"
)

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A wake-up closes the channel of its key only, and a fresh one replaces it; a key nobody
// waits for answers closed (re-read at once, never wait forever) and is forgotten once its
// last waiter leaves; the poll wakes only keys quiet for its interval.
func TestWakeups(t *testing.T) {
	w := newWakeups()
	releaseA, releaseB := w.acquire("a"), w.acquire("b")
	a, b := w.channel("a"), w.channel("b")
	w.wake("a")
	if !isClosed(a) || isClosed(b) {
		t.Fatalf("wake(a): a closed %v, b closed %v; want only a", isClosed(a), isClosed(b))
	}
	if isClosed(w.channel("a")) {
		t.Fatal("after a wake-up the key has no fresh channel")
	}
	if !isClosed(w.channel("nobody")) {
		t.Fatal("a key nobody waits for must answer with a closed channel")
	}

	// The poll: b was last woken an hour ago, a is not quiet (its last wake-up set by hand, so
	// that no pause of the test's own goroutine can make it look quiet).
	w.mu.Lock()
	w.byKey["b"].woken = time.Now().Add(-time.Hour)
	w.byKey["a"].woken = time.Now().Add(time.Hour)
	w.mu.Unlock()
	a, b = w.channel("a"), w.channel("b")
	w.wakeQuiet(time.Minute)
	if !isClosed(b) || isClosed(a) {
		t.Fatalf("wakeQuiet: b (quiet) closed %v, a (just woken) closed %v", isClosed(b), isClosed(a))
	}

	releaseA()
	releaseA() // a second release is harmless
	if !isClosed(w.channel("a")) {
		t.Fatal("a key whose last waiter left is still registered")
	}
	releaseB()
	w.mu.Lock()
	left := len(w.byKey)
	w.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d keys left after every waiter released", left)
	}
}

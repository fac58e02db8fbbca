package loops_test

import (
	"sync/atomic"
	"testing"

	"github.com/harness-edge/harness-edge/backend/internal/loops"
)

// Stop closes the stop channel of every loop once and returns only after all of them returned.
func TestStopWaitsForEveryLoop(t *testing.T) {
	var g loops.Group
	var returned atomic.Int32
	for range 3 {
		if !g.Go("test", func(stop <-chan struct{}) {
			<-stop
			returned.Add(1)
		}) {
			t.Fatal("Go refused a loop before Stop")
		}
	}
	g.Stop()
	if n := returned.Load(); n != 3 {
		t.Fatalf("Stop returned with %d of 3 loops returned", n)
	}
	if g.Context().Err() == nil {
		t.Fatal("the group's context is not cancelled after Stop")
	}
	g.Stop() // a second Stop is a no-op
}

// A loop started after Stop does not run: nothing could ever wait for it.
func TestGoAfterStopRefuses(t *testing.T) {
	var g loops.Group
	g.Stop()
	ran := false
	if g.Go("late", func(<-chan struct{}) { ran = true }) {
		t.Fatal("Go accepted a loop after Stop")
	}
	g.Stop()
	if ran {
		t.Fatal("a loop started after Stop ran")
	}
	select {
	case <-g.Stopping():
	default:
		t.Fatal("Stopping is not closed after Stop")
	}
}

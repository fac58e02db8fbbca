package backend

import (
	"testing"

	"github.com/harness-edge/harness-edge/backend/internal/hotwindow"
	"github.com/harness-edge/harness-edge/backend/store"
)

// A settlement nobody waits for costs nothing (on a shared store every submission settles: a
// channel made per settlement was an allocation per live event); a waiter's channel is closed
// by the settlement it waits for, and a wait for what has settled returns at once.
func TestSettleWakesWaitersAndAllocatesForNoneElse(t *testing.T) {
	v := newPublishedView(store.Execution{}, hotwindow.New(8, 0))
	n := int64(0)
	if allocs := testing.AllocsPerRun(100, func() { n++; v.settle(n) }); allocs != 0 {
		t.Fatalf("a settlement without waiters allocated %.0f times; want none", allocs)
	}
	done, ch := v.settledWait(n + 1)
	if done {
		t.Fatal("a wait for a submission not yet settled returned done")
	}
	select {
	case <-ch:
		t.Fatal("the waiter's channel is closed before its settlement")
	default:
	}
	v.settle(n + 1)
	select {
	case <-ch:
	default:
		t.Fatal("the settlement did not wake its waiter")
	}
	if done, _ := v.settledWait(n + 1); !done {
		t.Fatal("a wait for a settled submission did not return done")
	}
}

package cluster

import (
	"io"
	"log/slog"
	"testing"
	"time"
)

// The three rules of lease.go, on the node's own view of its lease (times set by hand, so
// nothing waits): a node vouches for its lease only while its last renewal is less than a
// lease old, and takes new executions only while it is less than two thirds of one old; it judges others only after a whole lease of renewals with no gap and no failed
// renewal; a fenced epoch is forgotten once.
func TestLeaseRules(t *testing.T) {
	const lease = time.Minute
	c := &Cluster{lease: lease}
	now := time.Now()
	set := func(epoch int64, renewed, heldSince, troubleAt time.Time) {
		c.held.epoch, c.held.renewed, c.held.heldSince, c.held.troubleAt = epoch, renewed, heldSince, troubleAt
	}
	for _, tc := range []struct {
		name                       string
		epoch                      int64
		renewed, heldSince, trbl   time.Duration // before now
		sure, mayClaim, renewalBad bool
		admits                     bool
	}{
		{"just acquired", 7, 0, 0, 2 * lease, true, false, false, true},
		{"held a whole lease", 7, lease / 3, 2 * lease, 2 * lease, true, true, false, true},
		{"renewals behind: sure, shedding starts", 7, 3 * lease / 4, 2 * lease, 2 * lease, true, true, false, false},
		{"last renewal a lease old", 7, lease + time.Second, 3 * lease, 3 * lease, false, false, false, false},
		{"a renewal failed lately", 7, lease / 3, 2 * lease, lease / 6, true, false, true, true},
		{"fenced, no epoch", 0, 0, 2 * lease, 2 * lease, false, false, false, false},
	} {
		set(tc.epoch, now.Add(-tc.renewed), now.Add(-tc.heldSince), now.Add(-tc.trbl))
		if got := c.Sure(); got != tc.sure {
			t.Errorf("%s: Sure() = %v, want %v", tc.name, got, tc.sure)
		}
		if got := c.mayClaim(); got != tc.mayClaim {
			t.Errorf("%s: mayClaim() = %v, want %v", tc.name, got, tc.mayClaim)
		}
		if got := c.Admits(); got != tc.admits {
			t.Errorf("%s: Admits() = %v, want %v", tc.name, got, tc.admits)
		}
		if got := c.RenewalFailing(); got != tc.renewalBad {
			t.Errorf("%s: RenewalFailing() = %v, want %v", tc.name, got, tc.renewalBad)
		}
	}

	// A renewal that comes a whole lease after the previous one starts a new run: others may
	// have judged this node meanwhile, so it may not judge them for another lease.
	set(7, now.Add(-2*lease), now.Add(-5*lease), now.Add(-5*lease))
	c.markRenewed(7, now)
	if !c.Sure() || c.mayClaim() {
		t.Errorf("after a renewal following a gap: Sure %v, mayClaim %v; want sure, not judging", c.Sure(), c.mayClaim())
	}
	// A renewal of an epoch that is no longer held changes nothing.
	c.markRenewed(6, now.Add(time.Hour))
	if c.held.renewed != now {
		t.Error("a renewal of a stale epoch moved the lease")
	}
	if !c.dropEpoch(7) || c.Epoch() != 0 || c.dropEpoch(7) {
		t.Error("dropEpoch: the current epoch is forgotten once, then no longer held")
	}
}

// The lapse channel (vouch.go): open while the node vouches for its lease, closed once a lease
// passed since the last renewal (or the epoch was fenced), a fresh one after the next renewal.
func TestLapseFollowsTheLease(t *testing.T) {
	const lease = time.Minute
	c := &Cluster{lease: lease, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	now := time.Now()
	c.held.epoch, c.held.renewed = 7, now.Add(-lease/3)
	first := c.Lapsed()
	if next := c.checkLapse(); isClosed(first) || next <= lease/2 || next > lease {
		t.Fatalf("renewed a third of a lease ago: lapsed %v, next check in %s", isClosed(first), next)
	}
	c.held.renewed = now.Add(-lease - time.Second)
	if next := c.checkLapse(); !isClosed(first) || next != lease/3 {
		t.Fatalf("renewed more than a lease ago: lapsed %v, next check in %s", isClosed(first), next)
	}
	if !isClosed(c.Lapsed()) {
		t.Fatal("a subscription that starts after the lapse got an open channel")
	}
	c.checkLapse() // closing twice would panic
	if !c.markRenewed(7, now) {
		t.Fatal("a renewal after a lapse did not report that the node vouches again")
	}
	second := c.Lapsed()
	if isClosed(second) || second == first {
		t.Fatal("after the renewal, the lapse channel is not a fresh open one")
	}
	if c.markRenewed(7, now) {
		t.Fatal("a renewal without a lapse reported one")
	}
	c.dropEpoch(7)
	if !isClosed(second) {
		t.Fatal("a fenced epoch did not close the lapse channel")
	}
}

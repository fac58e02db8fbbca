package cluster

import (
	"testing"
	"time"
)

// The three rules of lease.go, on the node's own view of its lease (times set by hand, so
// nothing waits): a node vouches for its lease only while its last renewal is less than a
// lease old; it judges others only after a whole lease of renewals with no gap and no failed
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
	}{
		{"just acquired", 7, 0, 0, 2 * lease, true, false, false},
		{"held a whole lease", 7, lease / 3, 2 * lease, 2 * lease, true, true, false},
		{"last renewal a lease old", 7, lease + time.Second, 3 * lease, 3 * lease, false, false, false},
		{"a renewal failed lately", 7, lease / 3, 2 * lease, lease / 6, true, false, true},
		{"fenced, no epoch", 0, 0, 2 * lease, 2 * lease, false, false, false},
	} {
		set(tc.epoch, now.Add(-tc.renewed), now.Add(-tc.heldSince), now.Add(-tc.trbl))
		if got := c.Sure(); got != tc.sure {
			t.Errorf("%s: Sure() = %v, want %v", tc.name, got, tc.sure)
		}
		if got := c.mayClaim(); got != tc.mayClaim {
			t.Errorf("%s: mayClaim() = %v, want %v", tc.name, got, tc.mayClaim)
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

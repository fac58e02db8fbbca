package caddymodule

import (
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// The commit linger of a store (its commit_linger setting): how long a group commit waits,
// from its first write, for the writes of other executions to join it, while writers are
// concurrent (backend/store/committer_linger.go). Live executions emitting deltas then share
// one transaction and its syncs instead of paying them by the handful; every event still
// reaches clients, and every start, action and terminal event is still acknowledged, only once
// durable — at most the linger later.

// DefaultCommitLinger is commit_linger's default.
const DefaultCommitLinger = 2 * time.Millisecond

// maxCommitLinger bounds commit_linger: every event waits up to this long before its commit.
const maxCommitLinger = 100 * time.Millisecond

// commitLinger is the linger a store's setting asks for: the default when unset, 0 (off) when
// set to 0, an error when negative or above maxCommitLinger.
func commitLinger(setting *caddy.Duration, storeName string) (time.Duration, error) {
	if setting == nil {
		return DefaultCommitLinger, nil
	}
	d := time.Duration(*setting)
	if d < 0 || d > maxCommitLinger {
		return 0, fmt.Errorf("store %s: commit_linger %s: want 0 (off) to %s", storeName, d, maxCommitLinger)
	}
	return d, nil
}

// parseCommitLinger reads commit_linger's Caddyfile value and checks it.
func parseCommitLinger(value, storeName string) (*caddy.Duration, error) {
	d, err := caddy.ParseDuration(value)
	if err != nil {
		return nil, fmt.Errorf("store %s: commit_linger %q: %v", storeName, value, err)
	}
	linger := caddy.Duration(d)
	if _, err := commitLinger(&linger, storeName); err != nil {
		return nil, err
	}
	return &linger, nil
}

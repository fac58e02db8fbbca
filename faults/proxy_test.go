package faults

import (
	"testing"

	"github.com/harness-edge/harness-edge/internal/pgtest"
)

// proxy is pgtest.Proxy: a TCP proxy between one node and the database whose Pause, Drop and
// Heal inject stalls and partitions (harness-nemesis uses the same one).
type proxy = pgtest.Proxy

// startProxy listens on a free loopback port and forwards to upstream until t ends.
func startProxy(t *testing.T, upstream string) *proxy {
	t.Helper()
	p, err := pgtest.NewProxy(upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

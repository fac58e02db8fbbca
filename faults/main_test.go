package faults

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/internal/testutil"
)

// scale is what differs between the lean form (CI) and the full form (make faults).
type scale struct {
	full bool
	// lease is the nodes' HARNESS_LEASE: how long a silent node keeps its executions.
	lease time.Duration
	// stall is how long a frozen node, a stalled database or a partition lasts: longer than the
	// lease, so that each fault costs a node its lease.
	stall time.Duration
	// takeover is how many running executions the node killed in the takeover scenario holds.
	takeover int
	// clients, rate and maxStarts bound the load of each scenario.
	clients   int
	rate      float64 // starts per second, all clients together
	maxStarts int
}

func currentScale() scale {
	if os.Getenv("HARNESS_FAULTS") == "full" {
		return scale{full: true, lease: 10 * time.Second, stall: 20 * time.Second, takeover: 5000,
			clients: 16, rate: 150, maxStarts: 30000}
	}
	// A lease of 5 s, not less: make test runs other packages beside this one on two cores, and
	// a node starved of CPU for a whole lease would fail a scenario for the wrong reason.
	return scale{lease: 5 * time.Second, stall: 8 * time.Second, takeover: 300,
		clients: 8, rate: 40, maxStarts: 1200}
}

// Bounds the invariants are checked against (stated here, once).
const (
	// storeTimeout is the harness's default store_timeout: a store call that takes longer
	// answers 503 UNAVAILABLE (issue 24).
	storeTimeout = 5 * time.Second
	// lbTryDuration is examples/cluster-lb.Caddyfile's lb_try_duration: a request the balancer
	// could not deliver is tried on the other node for up to this long.
	lbTryDuration = 5 * time.Second
	// requestSlack is what a request may take beyond the store's timeout (a loaded 2-core
	// machine, the balancer's hop).
	requestSlack = 3 * time.Second
	// agreeWithin is how long after the database settled every node's answer may still differ
	// from it (the poll of a missed notice is 1 s; a node that lost its lease re-reads).
	agreeWithin = 10 * time.Second
	// logLinesPerFault bounds what one node writes to stderr from a fault's injection to the
	// end of its checks: a summary per burst, not a line per request or per execution.
	logLinesPerFault = 60
	// requestGuard only keeps a hung request from hanging the test; the bound asserted is
	// requestBound.
	requestGuard = 90 * time.Second
)

// requestBound is the longest a request may wait (invariant 6): the store's timeout plus slack,
// plus the balancer's retries for a request sent through it.
func requestBound(viaBalancer bool) time.Duration {
	if viaBalancer {
		return storeTimeout + lbTryDuration + requestSlack
	}
	return storeTimeout + requestSlack
}

// buildCaddy builds cmd/caddy once per test binary, without the race detector even under
// -race: what is under test here is timing (leases of seconds, takeovers of thousands), which
// an instrumented node, several times slower, would turn into noise; cmd/caddy's own tests run
// the instrumented binary.
func buildCaddy(t *testing.T) string {
	t.Helper()
	return caddyBinary.Path(t)
}

var caddyBinary = testutil.GoBinary{Package: "../cmd/caddy"}

func TestMain(m *testing.M) {
	code := m.Run()
	caddyBinary.Remove()
	os.Exit(code)
}

// unprivileged is who the nodes run as: nobody when the test runs as root (CI), as an operator
// would run them; nil (the test's own user) otherwise.
func unprivileged() *syscall.Credential {
	if os.Geteuid() != 0 {
		return nil
	}
	return &syscall.Credential{Uid: 65534, Gid: 65534}
}

// Package faults is the fault-injection suite of a cluster (issue 24, docs/scale-out.md): real
// parts only — a throw-away PostgreSQL 15 (internal/pgtest), two nodes and the load balancer as
// real Caddy processes built from cmd/caddy and started from examples/cluster.Caddyfile and
// examples/cluster-lb.Caddyfile, and a TCP proxy of the test's own between each node and the
// database (one for the node's pool, one for its LISTEN session), through which faults are
// injected per node.
//
// Each scenario runs a bounded load of mock executions (through the balancer and directly at
// the nodes), injects one fault — a node killed, a node frozen longer than its lease, the
// database stalled or crashed, one node cut from the database (its connections reset, or held
// silent), one node's notifications cut — then checks the invariants of invariants_test.go from
// the database and from every node.
//
// The package holds tests only. `go test ./faults/` runs the lean form (a few hundred
// executions, short stalls: CI); `make faults` runs the full form (HARNESS_FAULTS=full: a
// takeover of 5,000 running executions, 20 s stalls) and prints the figures of each fault.
package faults

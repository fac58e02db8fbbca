package faults

import (
	"strings"
	"testing"
	"time"
)

// Each invariant reports a hand-made violation and accepts the same input repaired: none of
// the checks run after a fault can pass by being unable to fail.

// completed is a well-formed succeeded execution of n events.
func completed(id string, n int) *dbExecution {
	x := &dbExecution{id: id, state: "succeeded"}
	for i := 1; i < n; i++ {
		x.events = append(x.events, dbEvent{sequence: int64(i), typ: "output.text.delta"})
	}
	x.events = append(x.events, dbEvent{sequence: int64(n), typ: "run.completed"})
	return x
}

func failedBy(id, node string, n int) *dbExecution {
	x := completed(id, n)
	x.state = "failed"
	x.events[n-1] = dbEvent{sequence: int64(n), typ: "run.failed", message: "Node " + node + " stopped before the execution finished"}
	return x
}

func requireViolation(t *testing.T, got []string, want string) {
	t.Helper()
	for _, v := range got {
		if strings.Contains(v, want) {
			return
		}
	}
	t.Fatalf("violations %q, want one containing %q", got, want)
}

func requireNone(t *testing.T, got []string) {
	t.Helper()
	if len(got) > 0 {
		t.Fatalf("violations on a valid input: %q", got)
	}
}

func TestCheckAcknowledgedReportsALostStart(t *testing.T) {
	db := map[string]*dbExecution{"x1": completed("x1", 3)}
	acks := []ack{{id: "x1", owner: "a"}, {id: "x2", owner: "b", via: "lb"}}
	requireViolation(t, checkAcknowledged(acks, db), "x2 (acknowledged by b via lb) is not in the database")
	db["orphan"] = &dbExecution{id: "orphan", events: []dbEvent{{sequence: 1, typ: "run.queued"}}}
	requireViolation(t, checkAcknowledged(acks[:1], db), "orphan has 1 events but no execution record")
	delete(db, "orphan")
	requireNone(t, checkAcknowledged(acks[:1], db))
}

func TestCheckEventLogsReportsGapsAndTerminals(t *testing.T) {
	gap := completed("gap", 4)
	gap.events = append(gap.events[:1], gap.events[2:]...) // 1, 3, 4
	twice := completed("twice", 3)
	twice.events = append(twice.events, dbEvent{sequence: 4, typ: "run.failed"})
	none := &dbExecution{id: "none", state: "running", events: []dbEvent{{sequence: 1, typ: "run.queued"}}}
	after := completed("after", 3)
	after.events = append(after.events[:2], dbEvent{sequence: 3, typ: "run.completed"}, dbEvent{sequence: 4, typ: "output.text.delta"})
	mismatch := completed("mismatch", 2)
	mismatch.state = "failed"
	for want, x := range map[string]*dbExecution{
		"gap: event 2 has sequence 3":      gap,
		"twice: 2 terminal events":         twice,
		"none: 0 terminal events":          none,
		"after: events follow":             after,
		"mismatch: terminal event run.com": mismatch,
	} {
		requireViolation(t, checkEventLogs(map[string]*dbExecution{x.id: x}), want)
	}
	requireNone(t, checkEventLogs(map[string]*dbExecution{"ok": completed("ok", 5)}))
}

func TestCheckFailuresReportsAHealthyNodesFailure(t *testing.T) {
	acks := []ack{{id: "x1", owner: "a"}, {id: "x2", owner: "b"}, {id: "x3", owner: "a"}}
	db := map[string]*dbExecution{"x1": failedBy("x1", "a", 3), "x2": failedBy("x2", "b", 3)}
	requireViolation(t, checkFailures(acks, db, []string{"a"}), "node b was healthy")
	db["x2"] = completed("x2", 3)
	db["x3"] = failedBy("x3", "b", 3) // named after the wrong node
	requireViolation(t, checkFailures(acks, db, []string{"a", "b"}), "but node a acknowledged it")
	db["x3"] = completed("x3", 3)
	db["x3"].events[2] = dbEvent{sequence: 3, typ: "run.failed", message: "provider crashed"}
	requireViolation(t, checkFailures(acks, db, []string{"a"}), "not a node stop")
	db["x3"].events[2] = dbEvent{sequence: 3, typ: "run.failed", message: notStoredMessage}
	requireNone(t, checkFailures(acks, db, []string{"a"})) // x3 is a's
	requireViolation(t, checkFailures(acks, db, []string{"b"}), "but its node a was healthy")
	db["x3"].events[2] = dbEvent{sequence: 3, typ: "run.cancelled"}
	requireViolation(t, checkFailures(acks, db, []string{"a"}), "nobody cancelled it")
	db["x3"] = completed("x3", 3)
	requireNone(t, checkFailures(acks, db, []string{"a"}))
}

func TestCheckAgreementReportsAStaleNode(t *testing.T) {
	db := map[string]*dbExecution{"x1": failedBy("x1", "a", 18)}
	stale := []view{{endpoint: "a", id: "x1", state: "running", lastSequence: 17}}
	requireViolation(t, checkAgreement(stale, db), "x1 at a: running to #17, the database failed to #18")
	requireViolation(t, checkAgreement([]view{{endpoint: "lb", id: "x1", err: "status 500"}}, db), "x1 at lb: status 500")
	requireNone(t, checkAgreement([]view{{endpoint: "b", id: "x1", state: "failed", lastSequence: 18}}, db))
}

func TestCheckStreamsReportsAStreamThatNeverEnds(t *testing.T) {
	db := map[string]*dbExecution{"x1": failedBy("x1", "a", 4)}
	requireViolation(t, checkStreams([]followed{{id: "x1", firstBase: "a", sequences: []int64{1, 2}, reconnects: 3}}, db), "never reached a terminal event")
	requireViolation(t, checkStreams([]followed{{id: "x1", terminal: "run.failed", sequences: []int64{1, 2, 2, 3, 4}}}, db), "delivered #2 after #2")
	requireViolation(t, checkStreams([]followed{{id: "x1", terminal: "run.completed", sequences: []int64{1, 2, 3}}}, db), "the database with run.failed #4")
	requireNone(t, checkStreams([]followed{{id: "x1", terminal: "run.failed", sequences: []int64{1, 2, 3, 4}, reconnects: 1}}, db))
}

func TestCheckLatencyReportsAHang(t *testing.T) {
	hung := []request{{target: "a", latency: 20300 * time.Millisecond, status: 202}}
	requireViolation(t, checkLatency(hung, requestBound), "waited 20.3s (bound 8s)")
	requireNone(t, checkLatency([]request{{target: "lb", latency: 12 * time.Second, status: 503, code: "UNAVAILABLE"}}, requestBound))
}

func TestCheckLogLinesReportsAFlood(t *testing.T) {
	requireViolation(t, checkLogLines(map[string]int{"a": 3, "b": 2511}, logLinesPerFault), "node b wrote 2511 log lines")
	requireNone(t, checkLogLines(map[string]int{"a": 3, "b": logLinesPerFault}, logLinesPerFault))
}

func TestCheckHeldStreamsReportsAStreamHeldThroughTheCut(t *testing.T) {
	healed := time.Now()
	opened := healed.Add(-10 * time.Second)
	conn := func(base string, ended time.Duration, clean, terminal bool) streamConn {
		return streamConn{base: base, opened: opened, ended: healed.Add(ended), status: 200, clean: clean, terminal: terminal}
	}
	held := func(conns ...streamConn) []followed {
		return []followed{{id: "x1", firstBase: conns[0].base, terminal: "run.failed", conns: conns}}
	}
	requireViolation(t, checkHeldStreams(held(conn("a", 2*time.Second, true, false), conn("b", 3*time.Second, true, true)), "a", healed),
		"x1: the stream held on the cut node ended 2s after the network healed")
	requireViolation(t, checkHeldStreams(held(conn("a", -time.Second, false, false), conn("b", 0, true, true)), "a", healed),
		"broke instead of ending cleanly")
	requireViolation(t, checkHeldStreams(held(conn("a", -time.Second, true, false), conn("a", 0, true, true)), "a", healed),
		"did not resume at another node")
	requireViolation(t, checkHeldStreams(held(conn("b", -time.Second, true, true)), "a", healed), "was not open at the cut node a")
	requireNone(t, checkHeldStreams(held(conn("a", -3*time.Second, true, false), conn("b", 0, true, true)), "a", healed))
	requireNone(t, checkHeldStreams(held(conn("a", -9*time.Second, false, true)), "a", healed)) // it finished before the cut
	requireNone(t, checkHeldStreams(nil, "", healed))                                           // no node was cut
}

package check

import (
	"encoding/json"
	"strings"
	"time"
)

// The message backend.NodeStoppedMessage gives an execution failed because
// the node that ran it lost its lease to another node.
const (
	stoppedPrefix = "Node "
	stoppedSuffix = " stopped before the execution finished"
)

func stoppedNode(message string) (string, bool) {
	if !strings.HasPrefix(message, stoppedPrefix) || !strings.HasSuffix(message, stoppedSuffix) {
		return "", false
	}
	return strings.TrimSuffix(strings.TrimPrefix(message, stoppedPrefix), stoppedSuffix), true
}

// checkTakeovers counts false takeovers: executions failed because their
// node "stopped" while no fault killed, stopped or cut that node (or
// PostgreSQL) within three leases before. Issue 44 made overload take over
// no live node, so they are violations unless the run says to count them.
func checkTakeovers(ix *index, rep *Report, countOnly bool) {
	window := 3 * ix.lease()
	for _, id := range ix.order {
		x := ix.execs[id]
		node, at, line := "", time.Time{}, 0
		for _, s := range x.sightings {
			if s.ev.Type != "run.failed" {
				continue
			}
			var d executionError
			if json.Unmarshal(s.data, &d) == nil {
				if n, ok := stoppedNode(d.Message); ok {
					node, at, line = n, s.time, s.line.No
					break
				}
			}
		}
		if node == "" {
			for _, f := range x.finals {
				var snap snapshot
				if json.Unmarshal(f.Snapshot, &snap) == nil && snap.Error != nil {
					if n, ok := stoppedNode(snap.Error.Message); ok {
						node, at, line = n, f.T, finalLine(ix, f)
						if snap.UpdatedAt.Before(at) && !snap.UpdatedAt.IsZero() {
							at = snap.UpdatedAt // when it was failed, not when it was read
						}
						break
					}
				}
			}
		}
		if node == "" {
			continue
		}
		if ix.excused(node, at.Add(-window), at, 0) != 0 {
			continue
		}
		rep.FalseTakeovers++
		if countOnly {
			rep.note("false takeover: %s failed as node %s stopped (line %d) while no fault touched that node", id, node, line)
			continue
		}
		rep.add(FalseTakeover, id, []int{line}, "failed because node %s stopped, but no fault killed, stopped or cut it off (or PostgreSQL) within %v before", node, window)
	}
}

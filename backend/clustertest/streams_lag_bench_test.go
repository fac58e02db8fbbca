package clustertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/streams"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// BenchmarkTenantStreamLagAcrossNodes: as BenchmarkCrossNodeLag, for the tenant stream: one
// execution on node a emits b.N text deltas, 1 ms apart, on a durable PostgreSQL; subscribers of
// the tenant stream on node a and on node b note when each event arrives. Reported: p50 and p99
// of (arrival on b − arrival on a), with 1 and 100 subscribers on b (one pump per node reads the
// log; subscribers read its ring).
//
//	go test -run '^$' -bench TenantStreamLagAcrossNodes -benchtime 2000x ./backend/clustertest/
func BenchmarkTenantStreamLagAcrossNodes(b *testing.B) {
	for _, remote := range []int{1, 100} {
		b.Run(fmt.Sprintf("subscribers=%d", remote), func(b *testing.B) { benchmarkStreamLag(b, remote) })
	}
}

func benchmarkStreamLag(b *testing.B, remote int) {
	nodes := startCluster(b, clusterOpts{durable: true}, "a", "b")
	owner, other := nodes[0], nodes[1]
	conv := newConversation(b, owner)
	input := benchWords(b.N)
	arrivals := func(n *node) <-chan map[int64]time.Time {
		sub, err := backend.StreamHub(n.rt).Subscribe(streams.Filter{}, 0)
		if err != nil {
			b.Fatal(err)
		}
		out := make(chan map[int64]time.Time, 1)
		go func() {
			seen := make(map[int64]time.Time)
			deadline := time.After(10 * time.Minute)
			for done := false; !done; {
				ready := sub.Ready()
				entries, err := sub.Read(256)
				if err != nil {
					b.Errorf("read on %s: %v", n.name, err)
					break
				}
				now := time.Now()
				for _, e := range entries {
					seen[e.Position] = now
					done = done || e.Event.Terminal()
				}
				if len(entries) == 0 {
					select {
					case <-ready:
					case <-deadline:
						done = true
					}
				}
			}
			out <- seen
		}()
		return out
	}
	onOwner := arrivals(owner)
	onOther := make([]<-chan map[int64]time.Time, remote)
	for i := range onOther {
		onOther[i] = arrivals(other)
	}
	b.ResetTimer()
	start(b, owner, mockRequest(conv, input, api.JSONObject{"delayMs": 1}))
	reportLags(b, <-onOwner, onOther, func(int64) bool { return true })
}

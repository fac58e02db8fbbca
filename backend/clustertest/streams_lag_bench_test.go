package clustertest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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
	words := make([]string, b.N)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	arrivals := func(n *node) <-chan map[int64]time.Time {
		sub, err := n.rt.Streams().Subscribe(streams.Filter{}, 0)
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
	start(b, owner, mockRequest(conv, strings.Join(words, " "), api.JSONObject{"delayMs": 1}))
	atOwner := <-onOwner
	var lags []float64
	for _, ch := range onOther {
		for pos, t1 := range <-ch {
			if t0, ok := atOwner[pos]; ok {
				lags = append(lags, float64(t1.Sub(t0).Microseconds())/1000)
			}
		}
	}
	b.StopTimer()
	if len(lags) == 0 {
		b.Fatal("no event seen on both nodes")
	}
	slices.Sort(lags)
	b.ReportMetric(lags[len(lags)/2], "lag-p50-ms")
	b.ReportMetric(lags[min(len(lags)-1, len(lags)*99/100)], "lag-p99-ms")
}

package clustertest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// BenchmarkCrossNodeLag measures how long after the owner published an event (right after its
// commit) a subscriber on the other node receives it, on a durable PostgreSQL (fsync on): one execution on node a emits b.N text
// deltas, 1 ms apart, followed on a and on b. Reported: p50 and p99 of the lag in milliseconds
// (lag-p50-ms, lag-p99-ms), with one subscriber on b and with 100 (they share one reader of the
// store per node, so the figure should barely move). It also includes the owner-side subscriber's own wake-up, so the
// real commit → remote lag is a little larger than the figure, never smaller by more than that.
//
//	go test -run '^$' -bench CrossNodeLag -benchtime 2000x ./backend/clustertest/
func BenchmarkCrossNodeLag(b *testing.B) {
	for _, remote := range []int{1, 100} {
		b.Run(fmt.Sprintf("subscribers=%d", remote), func(b *testing.B) { benchmarkLag(b, remote) })
	}
}

func benchmarkLag(b *testing.B, remote int) {
	nodes := startCluster(b, clusterOpts{durable: true}, "a", "b")
	owner, other := nodes[0], nodes[1]
	conv := newConversation(b, owner)
	input := benchWords(b.N)
	b.ResetTimer()
	exec := start(b, owner, mockRequest(conv, input, api.JSONObject{"delayMs": 1}))

	arrivals := func(n *node) <-chan map[int64]time.Time {
		out := make(chan map[int64]time.Time, 1)
		go func() {
			seen := make(map[int64]time.Time)
			for e, err := range backend.FollowExecution(ctxT(b), n.rt, exec.ID, 0) {
				if err != nil {
					b.Errorf("follow on %s: %v", n.name, err)
					break
				}
				seen[e.Sequence] = time.Now()
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
	// The first events precede the remote subscriptions.
	reportLags(b, <-onOwner, onOther, func(seq int64) bool { return seq > 2 })
}

// benchWords is the input of an execution that emits n text deltas.
func benchWords(n int) string {
	words := make([]string, n)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	return strings.Join(words, " ")
}

// reportLags waits for every subscriber on the other node, stops the timer and reports p50 and
// p99 of (arrival there − arrival on the owner), in milliseconds, over the events both saw whose
// key (a sequence or a log position) keep accepts.
func reportLags(b *testing.B, atOwner map[int64]time.Time, onOther []<-chan map[int64]time.Time, keep func(int64) bool) {
	var lags []float64
	for _, ch := range onOther {
		for key, t1 := range <-ch {
			if t0, ok := atOwner[key]; ok && keep(key) {
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

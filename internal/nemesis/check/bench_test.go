package check

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// largeHistory is n executions in n/4 enqueue conversations, each with ten
// events seen on its execution stream and its conversation's, five reads and
// final reads on three nodes: about 30 lines per execution.
func largeHistory(n int) []history.Line {
	var lines []history.Line
	no := 0
	add := func(l history.Line) {
		no++
		l.No = no
		lines = append(lines, l)
	}
	add(history.Line{Kind: history.KindRun, Run: &history.Run{Seed: 1, Nodes: []string{"n1", "n2", "n3"}, Lease: history.Duration(5 * time.Second),
		Settings: history.Settings{MaxRunning: 1000}}})
	types := []string{"run.queued", "run.started", "output.text.delta", "output.text.delta", "output.text.delta", "output.text.delta", "output.text.delta", "output.text.delta", "output.text.done", "run.completed"}
	states := []string{"queued", "running", "running", "running", "succeeded"}
	for i := 0; i < n; i++ {
		id, conv := fmt.Sprintf("exec_%d", i), fmt.Sprintf("conv_%d", i/4)
		base := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		snap := func(state string, k int) json.RawMessage {
			return json.RawMessage(fmt.Sprintf(`{"id":%q,"conversationId":%q,"state":%q,"input":"x","updatedAt":%q}`, id, conv, state, base.Add(time.Duration(k)*time.Millisecond).Format(time.RFC3339Nano)))
		}
		for k, st := range states {
			op := "get"
			if k == 0 {
				op = "start"
			}
			add(history.Line{Kind: history.KindRequest, Request: &history.Request{Op: op, Tenant: "a", Invoke: base.Add(time.Duration(k) * time.Millisecond),
				Complete: base.Add(time.Duration(k)*time.Millisecond + 500*time.Microsecond), Status: 200, Answer: snap(st, k),
				Body: json.RawMessage(fmt.Sprintf(`{"conversationId":%q,"input":"x","idempotencyKey":%q}`, conv, id))}})
		}
		for _, stream := range []string{"execution", "conversation"} {
			for s, typ := range types {
				add(history.Line{Kind: history.KindEvent, Event: &history.Event{Header: history.Header{T: base.Add(time.Duration(s) * time.Millisecond)},
					Stream: stream, Subscription: stream + id, ExecutionID: id, Sequence: int64(s + 1), Type: typ,
					Data: json.RawMessage(`{"executionId":"` + id + `","data":{}}`)}})
			}
		}
		for _, node := range []string{"n1", "n2", "n3"} {
			add(history.Line{Kind: history.KindFinal, Final: &history.Final{Header: history.Header{T: t0.Add(time.Hour)}, Node: node, ExecutionID: id, Status: 200, State: "succeeded", Snapshot: snap("succeeded", 4)}})
		}
	}
	return lines
}

// go test -run '^$' -bench CheckLarge -benchtime 1x ./internal/nemesis/check/
func BenchmarkCheckLargeHistory(b *testing.B) {
	lines := largeHistory(4000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep := Check(lines, Options{})
		if !rep.OK() {
			b.Fatalf("%d lines: %s", len(lines), describe(rep))
		}
		b.ReportMetric(float64(len(lines)), "lines")
	}
}

package a2a_test

import (
	"testing"

	a2aprovider "github.com/harness-edge/harness-edge/backend/providers/a2a"
	"github.com/harness-edge/harness-edge/internal/a2atest"
)

// BenchmarkRelayStreamedTask runs one A2A task of 100 streamed messages (the JS agent sends them
// without pause) through the edge per iteration, the SDK following it to the end: what relaying
// costs per message, each committed with its checkpoint, per agent build (A2A 0.3 and 1.0
// wires). Reports messages/s.
func BenchmarkRelayStreamedTask(b *testing.B) {
	for _, build := range a2atest.Builds(b) {
		b.Run(build.Name, func(b *testing.B) {
			agent := build.Start(b)
			e := startEdge(b, b.TempDir(), a2aprovider.Config{URL: agent.URL})
			const messages = 100
			b.ResetTimer()
			for b.Loop() {
				res, streamed := e.run(b, "slow 100 0", nil)
				if !res.Succeeded() || len(streamed) != messages {
					b.Fatalf("result %s, %d deltas", res.Execution.State, len(streamed))
				}
			}
			b.ReportMetric(float64(b.N*messages)/b.Elapsed().Seconds(), "messages/s")
		})
	}
}

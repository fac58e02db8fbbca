package backend_test

import (
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// BenchmarkListExecutions lists a store of 2000 finished executions: the newest page (50
// records decoded), a page deep in the listing (cursor seek), and a state filter nothing
// matches (the whole index read, no record decoded: the worst case of a filter).
func BenchmarkListExecutions(b *testing.B) {
	rt := openRuntime(b, "", optsNone())
	conv := newConversation(b, rt)
	const n = 2000
	var last api.Execution
	for range n {
		last = start(b, rt, conv, startOpts{input: "x"})
	}
	collect(b, rt, last.ID, 0) // the mock is quick; wait for the newest to be safe
	deep, err := rt.ListExecutions(ctxT(b), backend.ExecutionFilter{Limit: 200})
	for range 4 {
		if err != nil {
			b.Fatal(err)
		}
		deep, err = rt.ListExecutions(ctxT(b), backend.ExecutionFilter{Limit: 200, After: deep.NextCursor})
	}
	for _, bc := range []struct {
		name   string
		filter backend.ExecutionFilter
	}{
		{"newest-page", backend.ExecutionFilter{}},
		{"page-after-1000", backend.ExecutionFilter{After: deep.NextCursor}},
		{"conversation-newest-page", backend.ExecutionFilter{ConversationID: conv}},
		{"state-matching-none", backend.ExecutionFilter{States: []api.ExecutionState{api.ExecutionStateCancelled}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := rt.ListExecutions(ctxT(b), bc.filter); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

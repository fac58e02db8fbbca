package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// BenchReadEvents is the store's read path of an execution's log, as a replay or a stream of a
// finished execution reads it (s.Events(id, 0, 0)): 300 text deltas of about 150 bytes each
// (a typical log), and 300 of 16 KiB. Everything a store checks of a value read from disk is
// in the figure; divide ns/op by 300 for one event.
func BenchReadEvents(b *testing.B, s store.Store) {
	for i, size := range []struct {
		name string
		text string
	}{{"small", "the quick brown fox jumps over the lazy dog"}, {"16KiB", strings.Repeat("w", 16<<10)}} {
		id := executionID(900 + i)
		batch := &store.Batch{Executions: []store.Execution{execution(900+i, 900, api.ExecutionStateSucceeded, "")}}
		const n = 300
		for seq := int64(1); seq <= n; seq++ {
			raw := fmt.Sprintf(`{"data":{"text":%q},"executionId":%q,"id":"%s:%d","sequence":%d,"time":"2026-12-01T00:00:00.000Z","type":"output.text.delta"}`,
				size.text, id, id, seq, seq)
			batch.Events = append(batch.Events, store.StoredEvent{ExecutionID: id,
				Event: store.Event{Sequence: seq, Type: api.StandardEventTypeOutputTextDelta, JSON: []byte(raw)}})
		}
		if err := s.Commit(batch); err != nil {
			b.Fatal(err)
		}
		b.Run(size.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				got, err := s.Events(id, 0, 0)
				if err != nil || len(got) != n {
					b.Fatalf("read %d events, %v", len(got), err)
				}
			}
		})
	}
}

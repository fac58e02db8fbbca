package bolt

import (
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// FuzzDecodeLogBlock: a stored block, however damaged, decodes or fails with ErrUndecodable,
// never panics; and a block the writer made decodes back to its entries.
func FuzzDecodeLogBlock(f *testing.F) {
	w := &logBlockWriter{execs: map[string]int{}}
	w.start(1700000000000)
	entries := []store.LogEntry{
		{Position: 5, ExecutionID: "exec_1", Scope: store.StreamScope{Tenant: "t", ConversationID: "conv_1", ProviderID: "mock"}, Event: store.Event{Sequence: 1, Type: api.StandardEventTypeRunQueued}},
		{Position: 6, ExecutionID: "exec_2", Scope: store.StreamScope{ConversationID: "conv_2", ProviderID: "acp"}, Event: store.Event{Sequence: 3, Type: "custom.type"}},
		{Position: 7, ExecutionID: "exec_1", Scope: store.StreamScope{Tenant: "t", ConversationID: "conv_1", ProviderID: "mock"}, Event: store.Event{Sequence: 2, Type: api.StandardEventTypeRunCompleted}},
	}
	for i := range entries {
		w.add(&entries[i])
	}
	good := append([]byte(nil), w.finish(len(entries))...)
	var b logBlock
	if err := decodeLogBlock(5, good, &b); err != nil || len(b.entries) != 3 {
		f.Fatalf("a written block: %v, %d entries", err, len(b.entries))
	}
	for i, h := range b.entries {
		e := entries[i]
		if string(h.execID) != e.ExecutionID || h.sequence != e.Event.Sequence || string(h.typ) != string(e.Event.Type) ||
			string(h.scope[0]) != e.Scope.Tenant || string(h.scope[1]) != e.Scope.ConversationID || string(h.scope[2]) != e.Scope.ProviderID {
			f.Fatalf("entry %d decoded as %q %d %q %q", i, h.execID, h.sequence, h.typ, h.scope)
		}
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, v []byte) {
		var b logBlock
		_ = decodeLogBlock(1, v, &b)
		_, _, _, _ = decodeLogBlockHead(1, v)
	})
}

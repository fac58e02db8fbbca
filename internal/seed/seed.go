// Package seed writes stored executions straight through the store API, as the mock provider
// leaves them for harness-load's e2e phase: the seeding tool (cmd/harness-seed) and the stores'
// growth benchmarks share it.
package seed

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Write commits n finished executions to s, batch of them a commit, perConv to a conversation,
// the oldest n milliseconds before now, and returns the id of the last conversation it wrote
// to. progress, when set, is told after every 100 commits.
func Write(s store.Store, n, perConv, batch int, progress func(done int)) (string, error) {
	start := time.Now().Add(-time.Duration(n) * time.Millisecond)
	var b store.Batch
	conv := ""
	for i := range n {
		if i%perConv == 0 {
			conv = newID("conv_", time.Time{})
			b.Conversations = append(b.Conversations, store.Conversation{Conversation: api.Conversation{
				ID: conv, CreatedAt: timestamp(start.Add(time.Duration(i) * time.Millisecond)), Metadata: api.JSONObject{}}})
		}
		at := start.Add(time.Duration(i) * time.Millisecond)
		id := newID("exec_", at)
		key := newID("idem_", time.Time{})
		rec := record(id, conv, key, api.ExecutionStateSucceeded, at)
		b.Executions = append(b.Executions, rec)
		b.Idempotency = append(b.Idempotency, store.Idempotency{ConversationID: conv, Key: key, Fingerprint: hex.EncodeToString([]byte(key))[:32], ExecutionID: id})
		b.Events = append(b.Events, Events(id, at)...)
		if len(b.Executions) == batch || i == n-1 {
			if err := s.Commit(&b); err != nil {
				return "", err
			}
			b = store.Batch{}
			if progress != nil && (i+1)%(batch*100) == 0 {
				progress(i + 1)
			}
		}
	}
	return conv, nil
}

// record is the record of a mock execution id of conversation conv, started with the
// idempotency key key at at, in state.
func record(id, conv, key string, state api.ExecutionState, at time.Time) store.Execution {
	return store.Execution{
		Execution: api.Execution{ID: id, ConversationID: conv, ProviderID: "mock", State: state,
			Input: "hello runtime", RequiredCapabilities: []string{}, EffectiveConfig: api.JSONObject{"delayMs": float64(0)},
			CreatedAt: timestamp(at), UpdatedAt: timestamp(at)},
		IdempotencyKey: &key,
	}
}

// Events are the mock's 7 events for "hello runtime", in the runtime's encoding (type last).
func Events(id string, at time.Time) []store.StoredEvent {
	kinds := []struct {
		typ  api.StandardEventType
		data string
	}{
		{api.StandardEventTypeRunQueued, `{}`},
		{api.StandardEventTypeRunStarted, `{}`},
		{api.StandardEventTypeOutputTextDelta, `{"text":"hello "}`},
		{api.StandardEventTypeOutputTextDelta, `{"text":"runtime"}`},
		{api.StandardEventTypeOutputTextDone, `{"text":"hello runtime"}`},
		{api.StandardEventTypeArtifactCreated, `{"artifactId":"artifact_00000000000000000000000000000000"}`},
		{api.StandardEventTypeRunCompleted, `{"result":null}`},
	}
	out := make([]store.StoredEvent, len(kinds))
	for i, k := range kinds {
		seq := int64(i + 1)
		raw := fmt.Sprintf(`{"data":%s,"executionId":%q,"id":"%s:%d","sequence":%d,"time":%q,"type":%q}`, k.data, id, id, seq, seq, timestamp(at), k.typ)
		out[i] = store.StoredEvent{ExecutionID: id, Event: store.Event{Sequence: seq, Type: k.typ, JSON: []byte(raw)}}
	}
	return out
}

// newID is prefix + 32 hex digits; with a time, the first 12 are its milliseconds (the
// runtime's time-ordered execution ids), the rest random.
func newID(prefix string, at time.Time) string {
	var b [16]byte
	rand.Read(b[:])
	if !at.IsZero() {
		ms := uint64(at.UnixMilli())
		for i := 5; i >= 0; i-- {
			b[i] = byte(ms)
			ms >>= 8
		}
	}
	return prefix + hex.EncodeToString(b[:])
}

func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

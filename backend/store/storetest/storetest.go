// Package storetest is the contract suite of package store: every implementation runs Run
// from its own tests, against the real thing (a bbolt file in t.TempDir(), a throw-away
// PostgreSQL), so the runtime can rely on exactly what store.Store documents.
package storetest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Run runs the contract suite. open must return a new, empty store each time it is called;
// the suite closes it (a second Close must be harmless, so open may also register one with
// t.Cleanup).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(t *testing.T, open func(t *testing.T) store.Store)
	}{
		{"Records", testRecords},
		{"Events", testEvents},
		{"Artifacts", testArtifacts},
		{"Idempotency", testIdempotency},
		{"Turns", testTurns},
		{"Admissions", testAdmissions},
		{"ForEachExecution", testForEachExecution},
		{"Deletions", testDeletions},
		{"Listing", testListing},
		{"Conversations", testConversations},
		{"Outbox", testOutbox},
		{"Usage", testUsage},
		{"PendingActions", testPendingActions},
		{"DueActions", testDueActions},
		{"Rules", testRules},
		{"SubmitOrderAndChains", testSubmitOrderAndChains},
		{"ConcurrentSubmit", testConcurrentSubmit},
		{"NoHalfAppliedBatch", testNoHalfAppliedBatch},
		{"StreamLog", testStreamLog},
		{"Close", testClose},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open) })
	}
}

// openStore opens a store for one test and closes it at the end.
func openStore(t *testing.T, open func(t *testing.T) store.Store) store.Store {
	t.Helper()
	s := open(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// Ids have the runtime's fixed length (a prefix and 32 hex digits): stores may rely on it.
func executionID(n int) string    { return fmt.Sprintf("exec_%032x", n) }
func conversationID(n int) string { return fmt.Sprintf("conv_%032x", n) }
func actionID(n int) string       { return fmt.Sprintf("act_%032x", n) }

// base is the creation time of the suite's records; createdAt(i) is i seconds later.
var base = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func createdAt(i int) api.Timestamp {
	return base.Add(time.Duration(i) * time.Second).Format("2006-01-02T15:04:05.000Z")
}

func execution(n, conv int, state api.ExecutionState, tenant string) store.Execution {
	return store.Execution{
		Execution: api.Execution{
			ID: executionID(n), ConversationID: conversationID(conv), ProviderID: "mock",
			State: state, Input: "input " + strconv.Itoa(n), RequiredCapabilities: []string{},
			EffectiveConfig: api.JSONObject{}, CreatedAt: createdAt(n), UpdatedAt: createdAt(n),
		},
		Tenant: tenant,
	}
}

// event builds a stored event as the runtime encodes it (the type last).
func event(id string, seq int64, typ api.StandardEventType) store.StoredEvent {
	raw := fmt.Sprintf(`{"data":{"n":%d},"executionId":%q,"id":"%s:%d","sequence":%d,"time":"2026-11-30T12:00:00.000Z","type":%q}`,
		seq, id, id, seq, seq, typ)
	return store.StoredEvent{ExecutionID: id, Event: store.Event{Sequence: seq, Type: typ, JSON: []byte(raw)}}
}

func deltas(id string, from, to int64) []store.StoredEvent {
	var out []store.StoredEvent
	for seq := from; seq <= to; seq++ {
		out = append(out, event(id, seq, api.StandardEventTypeOutputTextDelta))
	}
	return out
}

func commit(t *testing.T, s store.Store, b *store.Batch) {
	t.Helper()
	if err := s.Commit(b); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// sameJSON compares two values by their JSON form (how every record is defined).
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(g) != string(w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func sequences(events []store.Event) []int64 {
	out := make([]int64, len(events))
	for i, e := range events {
		out[i] = e.Sequence
	}
	return out
}

package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The upgrade fixture: one store's worth of every kind of record, as the runtime writes them.
// A store implementation writes it with WriteFixture once, with the release whose format it
// wants to keep reading, and commits the result (bolt: a bbolt file; postgres: SQL rows);
// its tests then open that committed store with the current code (which migrates it) and call
// CheckFixture, which reads every record back through the store API and compares it with
// what was written. Nothing here may change once a fixture was committed from it: it is the
// record of what the older release wrote.

// fixtureTime is the fixture's clock: every timestamp is a fixed offset from it.
var fixtureTime = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)

func fixtureAt(seconds int) api.Timestamp {
	return fixtureTime.Add(time.Duration(seconds) * time.Second).Format("2006-01-02T15:04:05.000Z")
}

// Fixture ids: an anonymous conversation (1) and one of tenant "alice" (2).
var (
	fixtureConvAnon  = conversationID(0xf1)
	fixtureConvAlice = conversationID(0xf2)
	fixtureDone      = executionID(0xf01) // succeeded, idempotency key, resolved action, artifacts
	fixtureWaiting   = executionID(0xf02) // waiting for its pending action, checkpoint
	fixtureAlice     = executionID(0xf03) // alice's, idempotency key, failed
	fixtureQueued    = executionID(0xf04) // queued, no events but run.queued written out of order
)

func fixtureKey(s string) *string { return &s }

func fixtureExecution(id, conv string, at int, state api.ExecutionState, tenant string) store.Execution {
	return store.Execution{
		Execution: api.Execution{
			ID: id, ConversationID: conv, ProviderID: "mock", State: state,
			Input: "fixture input of " + id, RequiredCapabilities: []string{"text"},
			EffectiveConfig: api.JSONObject{"delayMs": float64(0)}, CreatedAt: fixtureAt(at), UpdatedAt: fixtureAt(at + 1),
		},
		Tenant: tenant,
	}
}

// fixtureEvent is an event as the runtime's encoder writes it: the type last.
func fixtureEvent(id string, seq int64, typ api.StandardEventType, data string) store.StoredEvent {
	raw := fmt.Sprintf(`{"data":%s,"executionId":%q,"id":"%s:%d","sequence":%d,"time":%q,"type":%q}`,
		data, id, id, seq, seq, fixtureAt(int(seq)), typ)
	return store.StoredEvent{ExecutionID: id, Event: store.Event{Sequence: seq, Type: typ, JSON: []byte(raw)}}
}

// fixtureAction is the action request of fixtureDone (resolved) or fixtureWaiting (pending).
func fixtureAction(n int, execID string, status store.ActionStatus) store.Action {
	return store.Action{
		Request: api.ActionRequest{
			ID: actionID(n), ExecutionID: execID, Kind: api.ActionKindApproval, Title: "May I?",
			Payload: api.JSONObject{"tool": "shell"}, CreatedAt: fixtureAt(n),
		},
		Status: status,
	}
}

func fixtureIdempotency() []store.Idempotency {
	return []store.Idempotency{
		{ConversationID: fixtureConvAnon, Key: "fixture-key-1", Fingerprint: "fp-1", ExecutionID: fixtureDone},
		{ConversationID: fixtureConvAlice, Key: "fixture key \x00 2", Fingerprint: "fp-2", ExecutionID: fixtureAlice, Tenant: "alice"},
	}
}

func fixtureRecords() []store.Execution {
	done := fixtureExecution(fixtureDone, fixtureConvAnon, 10, api.ExecutionStateSucceeded, "")
	done.IdempotencyKey = fixtureKey("fixture-key-1")
	done.ActionIDs = []string{actionID(0xa1)}
	waiting := fixtureExecution(fixtureWaiting, fixtureConvAnon, 20, api.ExecutionStateAwaitingApproval, "")
	waiting.ActionIDs = []string{actionID(0xa2)}
	waiting.PendingActionID = actionID(0xa2)
	alice := fixtureExecution(fixtureAlice, fixtureConvAlice, 30, api.ExecutionStateFailed, "alice")
	alice.IdempotencyKey = fixtureKey("fixture key \x00 2")
	queued := fixtureExecution(fixtureQueued, fixtureConvAnon, 40, api.ExecutionStateQueued, "")
	return []store.Execution{done, waiting, alice, queued}
}

func fixtureConversations() []store.Conversation {
	return []store.Conversation{
		{Conversation: api.Conversation{ID: fixtureConvAnon, CreatedAt: fixtureAt(1), Metadata: api.JSONObject{}}},
		{Conversation: api.Conversation{ID: fixtureConvAlice, CreatedAt: fixtureAt(3), Metadata: api.JSONObject{"team": "a"}}, Tenant: "alice"},
	}
}

func fixtureEvents() []store.StoredEvent {
	var out []store.StoredEvent
	out = append(out,
		fixtureEvent(fixtureDone, 1, api.StandardEventTypeRunQueued, `{}`),
		fixtureEvent(fixtureDone, 2, api.StandardEventTypeRunStarted, `{}`),
		fixtureEvent(fixtureDone, 3, api.StandardEventTypeOutputTextDelta, `{"text":"héllo \"wörld\""}`),
		fixtureEvent(fixtureDone, 4, api.StandardEventTypeOutputTextDone, `{"text":"héllo \"wörld\""}`),
		fixtureEvent(fixtureDone, 5, api.StandardEventTypeRunCompleted, `{"result":{"n":1}}`),
		fixtureEvent(fixtureWaiting, 1, api.StandardEventTypeRunQueued, `{}`),
		fixtureEvent(fixtureWaiting, 2, api.StandardEventTypeActionRequired, `{"actionId":"`+actionID(0xa2)+`"}`),
		fixtureEvent(fixtureAlice, 1, api.StandardEventTypeRunQueued, `{}`),
		fixtureEvent(fixtureAlice, 2, api.StandardEventTypeRunFailed, `{"error":{"code":"PROVIDER_ERROR","message":"boom"}}`),
	)
	// An event in another field order (an older encoder, or another writer): stores must read
	// it back all the same, by decoding it.
	out = append(out, store.StoredEvent{ExecutionID: fixtureQueued, Event: store.Event{Sequence: 1, Type: api.StandardEventTypeRunQueued,
		JSON: []byte(`{"type":"run.queued","sequence":1,"executionId":"` + fixtureQueued + `","id":"` + fixtureQueued + `:1","time":"` + fixtureAt(41) + `","data":{}}`)}})
	return out
}

func fixtureArtifacts() []store.Artifact {
	var out []store.Artifact
	for i := range 2 {
		out = append(out, store.Artifact{Index: i, Artifact: api.Artifact{
			ID: fmt.Sprintf("artifact_%032x", i), ExecutionID: fixtureDone, Name: fmt.Sprintf("file-%d.txt", i),
			MediaType: "text/plain", Metadata: api.JSONObject{}, CreatedAt: fixtureAt(12 + i),
		}})
	}
	return out
}

// fixtureTargets are the webhook targets of the fixture's outbox.
var fixtureTargets = [][store.TargetIDLen]byte{target('w'), target('x')}

// fixturePlanner makes a row per target for every terminal event, at fixed times.
type fixturePlanner struct{}

func (fixturePlanner) Wants(typ api.StandardEventType) bool { return typ.Terminal() }

func (fixturePlanner) Notifications(executionID string, e store.Event, rec store.Execution, _ time.Time) ([]store.Notification, error) {
	var out []store.Notification
	for _, t := range fixtureTargets {
		at := fixtureTime.Add(time.Duration(e.Sequence) * time.Minute)
		out = append(out, store.Notification{ExecutionID: executionID, Sequence: e.Sequence, Target: t,
			URL: "https://hooks.example/" + string(t[:1]), Body: fmt.Appendf(nil, `{"state":%q}`, rec.Execution.State),
			CreatedAt: at, NextAttempt: at})
	}
	return out, nil
}

func (fixturePlanner) Committed() {}

// fixtureFailed is the notification the fixture records as failed (alice's run.failed to 'x').
func fixtureFailed() store.Notification {
	at := fixtureTime.Add(2 * time.Minute)
	failedAt := fixtureTime.Add(time.Hour)
	return store.Notification{ExecutionID: fixtureAlice, Sequence: 2, Target: target('x'), URL: "https://hooks.example/x",
		Body: []byte(`{"state":"failed"}`), CreatedAt: at, NextAttempt: at, Attempts: 5, LastError: "HTTP 500", FailedAt: &failedAt}
}

// WriteFixture commits the fixture into s, an empty store, in the batches the runtime would
// make, and leaves s open.
func WriteFixture(t testing.TB, s store.Store) {
	t.Helper()
	s.SetOutboxPlanner(fixturePlanner{})
	recs := fixtureRecords()
	early := make([]store.Execution, len(recs))
	for i, r := range recs {
		early[i] = r
		early[i].Execution.State = api.ExecutionStateQueued
		early[i].PendingActionID = ""
	}
	batches := []*store.Batch{
		{Conversations: fixtureConversations()},
		{Executions: early, Idempotency: fixtureIdempotency()},
		{Executions: recs, Events: fixtureEvents(), Artifacts: fixtureArtifacts(),
			Actions:     []store.Action{fixtureAction(0xa1, fixtureDone, store.ActionResolved), fixtureAction(0xa2, fixtureWaiting, store.ActionPending)},
			Checkpoints: []store.Checkpoint{{ExecutionID: fixtureWaiting, Data: []byte{0, 1, 2, 0xff, 'c', 'p'}}},
			ProviderState: []store.ProviderState{
				{Key: "mock\x00session", Value: []byte(`{"s":1}`)},
				{Key: "acp\x00k\x00with nul", Value: []byte{0, 0xfe}},
			}},
		{OutboxResults: []store.OutboxResult{{Notification: fixtureFailed(), Outcome: store.OutboxFailed}}},
	}
	for i, b := range batches {
		if err := s.Commit(b); err != nil {
			t.Fatalf("fixture batch %d: %v", i, err)
		}
	}
}

// CheckFixture reads every record WriteFixture wrote back from s through the store API and
// fails t on the first difference.
func CheckFixture(t *testing.T, s store.Store) {
	t.Helper()
	for _, c := range fixtureConversations() {
		got, found, err := s.Conversation(c.ID)
		if err != nil || !found {
			t.Fatalf("conversation %s: found %v, %v", c.ID, found, err)
		}
		sameJSON(t, "conversation "+c.ID, got, c)
	}
	recs := fixtureRecords()
	for _, r := range recs {
		got, found, err := s.Execution(r.Execution.ID)
		if err != nil || !found {
			t.Fatalf("execution %s: found %v, %v", r.Execution.ID, found, err)
		}
		sameJSON(t, "execution "+r.Execution.ID, got, r)
	}
	byExec := map[string][]store.Event{}
	for _, e := range fixtureEvents() {
		byExec[e.ExecutionID] = append(byExec[e.ExecutionID], e.Event)
	}
	for _, r := range recs {
		id := r.Execution.ID
		want := byExec[id]
		got, err := s.Events(id, 0, 0)
		if err != nil {
			t.Fatalf("events of %s: %v", id, err)
		}
		if len(got) != len(want) {
			t.Fatalf("events of %s: %d, want %d", id, len(got), len(want))
		}
		for i := range want {
			if got[i].Sequence != want[i].Sequence || got[i].Type != want[i].Type || string(got[i].JSON) != string(want[i].JSON) {
				t.Fatalf("event %s:%d = %d %s %s\nwant %d %s %s", id, i, got[i].Sequence, got[i].Type, got[i].JSON, want[i].Sequence, want[i].Type, want[i].JSON)
			}
		}
		if tail, err := s.Events(id, 1, 1); err != nil || (len(want) > 1 && (len(tail) != 1 || tail[0].Sequence != 2)) {
			t.Fatalf("events of %s after 1, limit 1: %v, %v", id, sequences(tail), err)
		}
		last, err := s.LastSequence(id)
		if err != nil || last != int64(len(want)) {
			t.Fatalf("last sequence of %s = %d, %v; want %d", id, last, err, len(want))
		}
	}
	arts, err := s.Artifacts(fixtureDone)
	if err != nil {
		t.Fatal(err)
	}
	var wantArts []api.Artifact
	for _, a := range fixtureArtifacts() {
		wantArts = append(wantArts, a.Artifact)
	}
	sameJSON(t, "artifacts", arts, wantArts)
	for _, a := range []store.Action{fixtureAction(0xa1, fixtureDone, store.ActionResolved), fixtureAction(0xa2, fixtureWaiting, store.ActionPending)} {
		got, found, err := s.Action(a.Request.ID)
		if err != nil || !found {
			t.Fatalf("action %s: found %v, %v", a.Request.ID, found, err)
		}
		sameJSON(t, "action "+a.Request.ID, got, a)
	}
	for _, r := range fixtureIdempotency() {
		got, found, err := s.Idempotency(r.Tenant, r.ConversationID, r.Key)
		if err != nil || !found || got != r {
			t.Fatalf("idempotency %q: %+v, found %v, %v", r.Key, got, found, err)
		}
		// Exactly once, also for records written by the older release.
		dup := r
		dup.ExecutionID = executionID(0xfff)
		if err := s.Commit(&store.Batch{Idempotency: []store.Idempotency{dup}}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a second idempotency record for %q: %v, want ErrConflict", r.Key, err)
		}
	}
	if _, found, err := s.Idempotency("", fixtureConvAlice, "fixture key \x00 2"); err != nil || found {
		t.Fatalf("alice's key found by the anonymous tenant (%v)", err)
	}
	cp, found, err := s.Checkpoint(fixtureWaiting)
	if err != nil || !found || string(cp) != "\x00\x01\x02\xffcp" {
		t.Fatalf("checkpoint: %q, %v, %v", cp, found, err)
	}
	for k, v := range map[string]string{"mock\x00session": `{"s":1}`, "acp\x00k\x00with nul": "\x00\xfe"} {
		got, found, err := s.ProviderState(k)
		if err != nil || !found || string(got) != v {
			t.Fatalf("provider state %q: %q, %v, %v", k, got, found, err)
		}
	}
	seen := map[string]bool{}
	if err := s.ForEachExecution(func(r store.Execution) bool { seen[r.Execution.ID] = true; return true },
		func(id string, err error) { t.Fatalf("undecodable %s: %v", id, err) }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != len(recs) {
		t.Fatalf("ForEachExecution visited %d records, want %d", len(seen), len(recs))
	}
	list := func(q store.ListQuery) []string {
		t.Helper()
		q.Limit = 10
		page, next, err := s.ListExecutions(q)
		if err != nil || next != nil {
			t.Fatalf("list %+v: %v, next %v", q, err, next)
		}
		var ids []string
		for _, r := range page {
			ids = append(ids, r.Execution.ID)
		}
		return ids
	}
	sameJSON(t, "anonymous listing", list(store.ListQuery{}), []string{fixtureQueued, fixtureWaiting, fixtureDone})
	sameJSON(t, "conversation listing", list(store.ListQuery{ConversationID: fixtureConvAnon,
		States: map[api.ExecutionState]bool{api.ExecutionStateSucceeded: true, api.ExecutionStateQueued: true}}), []string{fixtureQueued, fixtureDone})
	sameJSON(t, "alice's listing", list(store.ListQuery{Tenant: "alice", ConversationID: fixtureConvAlice}), []string{fixtureAlice})
	// The outbox: a pending row per target of fixtureDone's run.completed and of alice's
	// run.failed to 'w' ('x' failed).
	if n, err := s.PendingNotifications(); err != nil || n != 3 {
		t.Fatalf("pending notifications: %d, %v; want 3", n, err)
	}
	due, _, oldest, err := s.OutboxHeads(fixtureTime.Add(24*time.Hour), func(string) bool { return false }, 10)
	if err != nil || len(due) != 3 || !oldest.Equal(fixtureTime.Add(2*time.Minute)) {
		t.Fatalf("outbox heads: %d, oldest %v, %v", len(due), oldest, err)
	}
	for _, n := range due {
		at := fixtureTime.Add(time.Duration(n.Sequence) * time.Minute)
		if !n.CreatedAt.Equal(at) || !n.NextAttempt.Equal(at) || n.URL != "https://hooks.example/"+string(n.Target[:1]) {
			t.Fatalf("outbox row %+v", n)
		}
	}
	failed, err := s.FailedNotifications(fixtureAlice)
	if err != nil || len(failed) != 1 {
		t.Fatalf("failed notifications: %d, %v", len(failed), err)
	}
	want := fixtureFailed()
	if got := failed[0]; got.Attempts != want.Attempts || got.LastError != want.LastError || got.FailedAt == nil ||
		!got.FailedAt.Equal(*want.FailedAt) || string(got.Body) != string(want.Body) || got.Target != want.Target {
		t.Fatalf("failed notification %+v, want %+v", got, want)
	}
}

package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/usage"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Erasing a conversation (store.Batch.Erasures, backend/store/erasure.go).

// Traces looks into a store's own bytes — every bucket of the bbolt file, every table of the
// PostgreSQL schema — for anything that holds one of ids, outside what an erasure keeps on
// purpose about conversationID (its tombstone, the stream log's marker, the webhook rows that
// announce it), and describes each thing found. It may close s: the suite calls it last.
type Traces func(t *testing.T, s store.Store, conversationID string, ids []string) []string

// Erasure is the erasure's contract. traces inspects the store below its API.
func Erasure(t *testing.T, open func(t *testing.T) store.Store, traces Traces) {
	t.Run("EverythingOfItGoes", func(t *testing.T) { testErasureEverything(t, openStore(t, open), traces) })
	t.Run("BusyRefusedWholly", func(t *testing.T) { testErasureBusy(t, openStore(t, open)) })
	t.Run("GoneForever", func(t *testing.T) { testErasureGone(t, openStore(t, open)) })
	t.Run("RacingStarts", func(t *testing.T) {
		s := openStore(t, open)
		ErasureRace(t, s, s, 40)
	})
}

const erasureTenant = "acme"

// erasurePlanner is the suite's planner (rows for run.completed and output.text.done) that
// also announces erasures: a row per target, of the conversation, sequence 0.
type erasurePlanner struct{ planner }

func (p *erasurePlanner) ErasureNotifications(t store.Tombstone, at time.Time) ([]store.Notification, error) {
	var out []store.Notification
	for _, target := range p.targets {
		out = append(out, store.Notification{ExecutionID: t.ConversationID, Target: target, URL: "https://hooks.example/erased",
			Body: []byte(`{"type":"conversation.deleted","conversationId":"` + t.ConversationID + `"}`), CreatedAt: at, NextAttempt: at})
	}
	return out, nil
}

// erasureFixture is a conversation (90) of erasureTenant with three ended executions and all
// that hangs off them, beside a neighbour conversation (91) that must stay whole.
type erasureFixture struct {
	conv, neighbour string
	execs           []store.Execution // the conversation's
	other           store.Execution   // the neighbour's
	stateKey        string            // a provider state key of the conversation
}

func writeErasureFixture(t *testing.T, s store.Store) erasureFixture {
	t.Helper()
	f := erasureFixture{conv: conversationID(90), neighbour: conversationID(91), stateKey: "mock\x00session " + conversationID(90)}
	conv := func(id string) store.Conversation {
		return store.Conversation{Tenant: erasureTenant, Conversation: api.Conversation{ID: id, CreatedAt: createdAt(0), Metadata: api.JSONObject{"title": "secret"}}}
	}
	k1, k3 := "key-1", "key-3"
	e1 := execution(90, 90, api.ExecutionStateSucceeded, erasureTenant)
	e1.IdempotencyKey, e1.ActionIDs = &k1, []string{actionID(90), actionID(91)}
	e2 := execution(91, 90, api.ExecutionStateFailed, erasureTenant)
	e2.ActionIDs = []string{actionID(92)}
	e3 := execution(92, 90, api.ExecutionStateCancelled, erasureTenant)
	other := execution(93, 91, api.ExecutionStateSucceeded, erasureTenant)
	other.IdempotencyKey = &k1
	f.execs, f.other = []store.Execution{e1, e2, e3}, other
	ev := func(rec store.Execution, seq int64, typ api.StandardEventType) store.StoredEvent {
		return scoped(rec.Execution.ID, seq, typ, erasureTenant, rec.Execution.ConversationID, "mock")
	}
	action := func(n int, rec store.Execution, status store.ActionStatus) store.Action {
		a := pendingAction(n, rec, 30, true)
		a.Status = status
		return a
	}
	use := func(rec store.Execution, tokens int64) store.ExecutionUsage {
		return store.ExecutionUsage{ExecutionID: rec.Execution.ID, Tenant: erasureTenant, ConversationID: rec.Execution.ConversationID,
			ProviderID: "mock", CreatedMs: int64(store.PositionOf(rec.Execution).CreatedMs),
			Usage: usage.Usage{InputTokens: tokens, TotalTokens: tokens, Cost: usage.Money{Micros: 10 * tokens, Currency: "EUR"}}}
	}
	commit(t, s, &store.Batch{
		Conversations: []store.Conversation{conv(f.conv), conv(f.neighbour)},
		Executions:    []store.Execution{e1, e2, e3, other},
		Events: []store.StoredEvent{
			ev(e1, 1, api.StandardEventTypeRunStarted), ev(other, 1, api.StandardEventTypeRunStarted),
			ev(e1, 2, api.StandardEventTypeOutputTextDone), ev(e2, 1, api.StandardEventTypeRunStarted),
			ev(e1, 3, api.StandardEventTypeRunCompleted), ev(e2, 2, api.StandardEventTypeRunFailed),
			ev(other, 2, api.StandardEventTypeRunCompleted), ev(e3, 1, api.StandardEventTypeRunCancelled),
		},
		Artifacts: []store.Artifact{{Index: 0, Artifact: api.Artifact{ID: "art_" + e1.Execution.ID, ExecutionID: e1.Execution.ID,
			Name: "notes.txt", MediaType: "text/plain", Metadata: api.JSONObject{}, CreatedAt: createdAt(1)}}},
		Actions: []store.Action{action(90, e1, store.ActionResolved), action(91, e1, store.ActionPending), action(92, e2, store.ActionResolved)},
		Rules:   []store.Rule{rule(90, erasureTenant, f.conv, 1), rule(91, erasureTenant, "", 2), rule(92, erasureTenant, f.neighbour, 3)},
		Idempotency: []store.Idempotency{
			{Tenant: erasureTenant, ConversationID: f.conv, Key: k1, Fingerprint: "f", ExecutionID: e1.Execution.ID},
			// A binding no execution of the conversation carries the key of: it goes too.
			{Tenant: erasureTenant, ConversationID: f.conv, Key: k3, Fingerprint: "f", ExecutionID: e3.Execution.ID},
			{Tenant: erasureTenant, ConversationID: f.neighbour, Key: k1, Fingerprint: "f", ExecutionID: other.Execution.ID},
		},
		Checkpoints:   []store.Checkpoint{{ExecutionID: e1.Execution.ID, Data: []byte("checkpoint of " + e1.Execution.ID)}},
		ProviderState: []store.ProviderState{{Key: f.stateKey, Value: []byte("acp-session")}},
		Usage:         []store.ExecutionUsage{use(e1, 5), use(e2, 7), use(other, 11)},
	})
	return f
}

func (f erasureFixture) erasure(at time.Time) *store.Batch {
	return &store.Batch{Erasures: []store.ConversationErasure{{Tenant: erasureTenant, ConversationID: f.conv, At: at}},
		ProviderStateDeletions: []string{f.stateKey}}
}

// usageTotals sums the tenant's usage rows: their number and tokens, and per conversation.
func usageTotals(t *testing.T, s store.Store) (rows int, tokens int64, byConv map[string]int64) {
	t.Helper()
	byConv = map[string]int64{}
	err := s.ForEachUsage(store.UsageQuery{Tenant: erasureTenant, FromMs: 0, ToMs: 1 << 50}, func(r store.ExecutionUsage) bool {
		rows++
		tokens += r.Usage.TotalTokens
		byConv[r.ConversationID] += r.Usage.TotalTokens
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows, tokens, byConv
}

func testErasureEverything(t *testing.T, s store.Store, traces Traces) {
	p := &erasurePlanner{planner{targets: [][store.TargetIDLen]byte{target('a'), target('b')}}}
	s.SetOutboxPlanner(p)
	f := writeErasureFixture(t, s)
	log := s.(store.StreamLog)
	rowsBefore, tokensBefore, _ := usageTotals(t, s)
	var observed []store.LogEntry
	log.ObserveLog(func(entries []store.LogEntry) { observed = append(observed, entries...) })
	at := base.Add(time.Hour)
	commit(t, s, f.erasure(at))
	log.ObserveLog(nil)

	// Through the API: nothing of it is found; the neighbour is whole.
	if _, found, err := s.Conversation(f.conv); found || err != nil {
		t.Errorf("Conversation of the erased: found %v, %v", found, err)
	}
	var listed []string
	if err := s.ForEachConversation(erasureTenant, func(c store.Conversation) bool { listed = append(listed, c.ID); return true }, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(listed, []string{f.neighbour}) {
		t.Errorf("the tenant's conversations after the erasure: %v, want only the neighbour", listed)
	}
	tomb, found, err := s.(store.ErasureReader).Tombstone(f.conv)
	if err != nil || !found {
		t.Fatalf("Tombstone: %+v, %v, %v", tomb, found, err)
	}
	sameJSON(t, "tombstone", tomb, store.Tombstone{ConversationID: f.conv, Tenant: erasureTenant, DeletedAt: at, Executions: 3})
	for _, rec := range f.execs {
		id := rec.Execution.ID
		if _, found, _ := s.Execution(id); found {
			t.Errorf("execution %s still there", id)
		}
		if got, _ := s.Events(id, 0, 0); len(got) != 0 {
			t.Errorf("%s: %d events still there", id, len(got))
		}
	}
	for _, n := range []int{90, 91, 92} {
		if _, found, _ := s.Action(actionID(n)); found {
			t.Errorf("action %s still there", actionID(n))
		}
	}
	if pending, _, err := s.PendingActions(store.ActionQuery{Tenant: erasureTenant, Limit: 10}); err != nil || len(pending) != 0 {
		t.Errorf("the inbox still holds %d actions (%v)", len(pending), err)
	}
	for _, key := range []string{"key-1", "key-3"} {
		if _, found, _ := s.Idempotency(erasureTenant, f.conv, key); found {
			t.Errorf("idempotency record %q of the erased conversation still there", key)
		}
	}
	if rules, err := s.Rules(erasureTenant, f.conv); err != nil || len(rules) != 1 || rules[0].ID != ruleID(91) {
		t.Errorf("rules that apply to the erased conversation: %+v, %v; want only the tenant's", rules, err)
	}
	if _, found, _ := s.ProviderState(f.stateKey); found {
		t.Error("the provider state of the conversation is still there")
	}
	if _, found, _ := s.Execution(f.other.Execution.ID); !found {
		t.Error("the neighbour's execution was erased")
	}
	if got, _ := s.Events(f.other.Execution.ID, 0, 0); len(got) != 2 {
		t.Errorf("the neighbour's events: %d, want 2", len(got))
	}
	if _, found, _ := s.Idempotency(erasureTenant, f.neighbour, "key-1"); !found {
		t.Error("the neighbour's idempotency record was erased")
	}
	if _, found, _ := s.Rule(ruleID(92)); !found {
		t.Error("the neighbour's rule was erased")
	}

	// Usage: the same sums, but nothing names the erased executions or their conversation.
	rows, tokens, byConv := usageTotals(t, s)
	if rows != rowsBefore || tokens != tokensBefore || byConv[f.conv] != 0 || byConv[""] != 12 {
		t.Errorf("usage after the erasure: %d rows, %d tokens, by conversation %v; want %d rows, %d tokens, 12 under \"\"",
			rows, tokens, byConv, rowsBefore, tokensBefore)
	}

	// Webhooks: the erased executions' rows are gone, the announcement's are there.
	heads, _, _, err := s.OutboxHeads(at.Add(time.Hour), func(string) bool { return false }, 100)
	if err != nil {
		t.Fatal(err)
	}
	announced := 0
	for _, n := range heads {
		switch {
		case n.ExecutionID == f.conv && n.Sequence == 0:
			announced++
		case n.ExecutionID != f.other.Execution.ID:
			t.Errorf("outbox row %s:%d is still there", n.ExecutionID, n.Sequence)
		}
	}
	if announced != 2 {
		t.Errorf("%d rows announce the erasure, want one per target (2)", announced)
	}

	checkMarker(t, log, observed, f, tomb)

	var ids []string
	for _, rec := range f.execs {
		ids = append(ids, rec.Execution.ID)
	}
	ids = append(ids, actionID(90), actionID(91), actionID(92), ruleID(90), "acp-session")
	for _, trace := range traces(t, s, f.conv, ids) {
		t.Errorf("left in the store: %s", trace)
	}
}

// checkMarker: the log holds the neighbour's entries and, last, the marker; a reader resuming
// after any erased position meets it; the observer was handed it.
func checkMarker(t *testing.T, log store.StreamLog, observed []store.LogEntry, f erasureFixture, tomb store.Tombstone) {
	t.Helper()
	bounds, err := log.StreamLogBounds()
	if err != nil {
		t.Fatal(err)
	}
	if bounds.Last != 9 {
		t.Fatalf("the log's last position is %d, want 9 (eight events, one marker)", bounds.Last)
	}
	for _, q := range []store.LogQuery{{After: 0, AnyTenant: true}, {After: 0, Tenant: erasureTenant}, {After: 5, Tenant: erasureTenant}, {After: 0, ConversationID: f.conv, AnyTenant: true}} {
		page := readLog(t, log, q)
		if len(page.Entries) == 0 || page.Reached != 9 {
			t.Fatalf("ReadLog(%+v): %d entries, reached %d", q, len(page.Entries), page.Reached)
		}
		for _, e := range page.Entries[:len(page.Entries)-1] {
			if e.Erased != nil || e.ExecutionID != f.other.Execution.ID {
				t.Errorf("ReadLog(%+v) returns %s:%d@%d (erased %v)", q, e.ExecutionID, e.Event.Sequence, e.Position, e.Erased)
			}
		}
		m := page.Entries[len(page.Entries)-1]
		if m.Position != 9 || m.Erased == nil || m.ExecutionID != "" || m.Scope.ConversationID != f.conv || m.Scope.Tenant != erasureTenant {
			t.Fatalf("ReadLog(%+v)'s last entry is %+v, want the marker at 9", q, m)
		}
		sameJSON(t, "the marker's tombstone", *m.Erased, tomb)
	}
	if page := readLog(t, log, store.LogQuery{After: 0, Tenant: "other"}); len(page.Entries) != 0 {
		t.Errorf("another tenant reads %d entries (the marker is its tenant's)", len(page.Entries))
	}
	if len(observed) != 1 || observed[0].Position != 9 || observed[0].Erased == nil || observed[0].Scope.ConversationID != f.conv {
		t.Errorf("the observer saw %+v, want the marker at 9", observed)
	}
}

// A conversation with an execution that has not ended is not erased, and nothing of it goes.
func testErasureBusy(t *testing.T, s store.Store) {
	f := writeErasureFixture(t, s)
	running := execution(94, 90, api.ExecutionStateRunning, erasureTenant)
	commit(t, s, &store.Batch{Executions: []store.Execution{running}})
	bounds, _ := s.(store.StreamLog).StreamLogBounds()
	err := s.Commit(f.erasure(base))
	if !errors.Is(err, store.ErrConversationBusy) {
		t.Fatalf("erasing a conversation with a running execution: %v, want ErrConversationBusy", err)
	}
	if _, found, _ := s.Conversation(f.conv); !found {
		t.Error("the conversation record went")
	}
	for _, rec := range append(f.execs, running) {
		if _, found, _ := s.Execution(rec.Execution.ID); !found {
			t.Errorf("execution %s went", rec.Execution.ID)
		}
	}
	if got, _ := s.Events(f.execs[0].Execution.ID, 0, 0); len(got) != 3 {
		t.Errorf("events: %d, want 3", len(got))
	}
	if _, found, _ := s.ProviderState(f.stateKey); !found {
		t.Error("the provider state went with a refused erasure")
	}
	if _, found, _ := s.Idempotency(erasureTenant, f.conv, "key-3"); !found {
		t.Error("an idempotency record went")
	}
	if _, found, _ := s.(store.ErasureReader).Tombstone(f.conv); found {
		t.Error("a refused erasure left a tombstone")
	}
	if after, _ := s.(store.StreamLog).StreamLogBounds(); after != bounds {
		t.Errorf("the log moved from %+v to %+v", bounds, after)
	}
	if page := readLog(t, s.(store.StreamLog), store.LogQuery{AnyTenant: true}); len(page.Entries) != 8 {
		t.Errorf("the log holds %d entries, want the 8 events", len(page.Entries))
	}
	// Once it ended, the erasure goes through.
	running.Execution.State = api.ExecutionStateCancelled
	commit(t, s, &store.Batch{Executions: []store.Execution{running}})
	commit(t, s, f.erasure(base))
	if tomb, _, _ := s.(store.ErasureReader).Tombstone(f.conv); tomb.Executions != 4 {
		t.Errorf("tombstone %+v, want 4 executions", tomb)
	}
}

// An erased id is never written into again, nor erased twice; an unknown conversation and
// another tenant's cannot be erased.
func testErasureGone(t *testing.T, s store.Store) {
	f := writeErasureFixture(t, s)
	commit(t, s, f.erasure(base))
	late := execution(95, 90, api.ExecutionStateQueued, erasureTenant)
	for name, b := range map[string]*store.Batch{
		"a start":           {Executions: []store.Execution{late}},
		"its record again":  {Conversations: []store.Conversation{{Tenant: erasureTenant, Conversation: api.Conversation{ID: f.conv, CreatedAt: createdAt(0)}}}},
		"an event":          {Events: []store.StoredEvent{scoped(late.Execution.ID, 1, api.StandardEventTypeRunQueued, erasureTenant, f.conv, "mock")}},
		"an idempotency":    {Idempotency: []store.Idempotency{{Tenant: erasureTenant, ConversationID: f.conv, Key: "again", Fingerprint: "f", ExecutionID: late.Execution.ID}}},
		"a second erasure":  f.erasure(base),
		"an unknown one":    {Erasures: []store.ConversationErasure{{Tenant: erasureTenant, ConversationID: conversationID(99), At: base}}},
		"another tenant's":  {Erasures: []store.ConversationErasure{{Tenant: "intruder", ConversationID: f.neighbour, At: base}}},
		"a start and a put": {Executions: []store.Execution{late}, Conversations: []store.Conversation{{Tenant: erasureTenant, Conversation: api.Conversation{ID: conversationID(98), CreatedAt: createdAt(0)}}}},
	} {
		if err := s.Commit(b); !errors.Is(err, store.ErrConversationGone) {
			t.Errorf("%s: %v, want ErrConversationGone", name, err)
		}
	}
	if _, found, _ := s.Execution(late.Execution.ID); found {
		t.Error("an execution of the erased conversation was written")
	}
	if _, found, _ := s.Conversation(conversationID(98)); found {
		t.Error("a failed batch wrote its other records")
	}
	if _, found, _ := s.Conversation(f.neighbour); !found {
		t.Error("another tenant erased the neighbour")
	}
}

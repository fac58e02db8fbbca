package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The stream log's contract (store.StreamLog), for stores that keep it.

func testStreamLog(t *testing.T, open func(t *testing.T) store.Store) {
	if _, ok := open(t).(store.StreamLog); !ok {
		t.Skip("the store does not keep a stream log (store.StreamLog): nothing to check")
	}
	for _, c := range []struct {
		name string
		fn   func(t *testing.T, s store.Store, l store.StreamLog)
	}{
		{"PositionsInCommitOrder", testLogPositions},
		{"ScopesAndFilters", testLogFilters},
		{"ObserverSeesEveryCommit", testLogObserver},
		{"ConcurrentCommitsLeaveNoGap", testLogConcurrent},
		{"FailedBatchTakesNoPosition", testLogFailedBatch},
		{"DeletedExecutionsAreSkipped", testLogDeletions},
		{"Trim", testLogTrim},
		{"LargeCommitsAndManyConversations", testLogLargeCommits},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := openStore(t, open)
			c.fn(t, s, s.(store.StreamLog))
		})
	}
}

// scoped is an event with the stream scope of its execution.
func scoped(id string, seq int64, typ api.StandardEventType, tenant, conv, provider string) store.StoredEvent {
	e := event(id, seq, typ)
	e.Scope = &store.StreamScope{Tenant: tenant, ConversationID: conv, ProviderID: provider}
	return e
}

func readLog(t *testing.T, l store.StreamLog, q store.LogQuery) store.LogPage {
	t.Helper()
	page, err := l.ReadLog(q)
	if err != nil {
		t.Fatalf("ReadLog(%+v): %v", q, err)
	}
	return page
}

// ids lists entries as "execution:sequence@position".
func ids(entries []store.LogEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = fmt.Sprintf("%s:%d@%d", e.ExecutionID[len(e.ExecutionID)-2:], e.Event.Sequence, e.Position)
	}
	return out
}

func testLogPositions(t *testing.T, s store.Store, l store.StreamLog) {
	if l.StreamLogID() == "" || l.StreamLogID() != l.StreamLogID() {
		t.Fatalf("StreamLogID = %q: want a stable, non-empty identity", l.StreamLogID())
	}
	if b, err := l.StreamLogBounds(); err != nil || b != (store.LogBounds{Oldest: 1, Last: 0}) {
		t.Fatalf("bounds of an empty log = %+v, %v; want {1 0}", b, err)
	}
	x, y := executionID(1), executionID(2)
	commit(t, s, &store.Batch{Events: []store.StoredEvent{scoped(x, 1, api.StandardEventTypeRunQueued, "", conversationID(1), "mock"), scoped(x, 2, api.StandardEventTypeRunStarted, "", conversationID(1), "mock")}})
	commit(t, s, &store.Batch{Events: []store.StoredEvent{scoped(y, 1, api.StandardEventTypeRunQueued, "", conversationID(2), "mock")}})
	commit(t, s, &store.Batch{Events: []store.StoredEvent{scoped(x, 3, api.StandardEventTypeRunCompleted, "", conversationID(1), "mock")}})
	page := readLog(t, l, store.LogQuery{AnyTenant: true})
	want := []string{"01:1@1", "01:2@2", "02:1@3", "01:3@4"}
	if got := ids(page.Entries); !slices.Equal(got, want) || page.Reached != 4 {
		t.Fatalf("log = %v reached %d; want %v reached 4", got, page.Reached, want)
	}
	for _, e := range page.Entries {
		stored := event(e.ExecutionID, e.Event.Sequence, e.Event.Type)
		if string(e.Event.JSON) != string(stored.Event.JSON) {
			t.Errorf("entry %d carries %s; want the stored event %s", e.Position, e.Event.JSON, stored.Event.JSON)
		}
	}
	if got := page.Entries[2].Scope; got != (store.StreamScope{ConversationID: conversationID(2), ProviderID: "mock"}) {
		t.Errorf("scope of entry 3 = %+v", got)
	}
	if b, _ := l.StreamLogBounds(); b != (store.LogBounds{Oldest: 1, Last: 4}) {
		t.Errorf("bounds = %+v; want {1 4}", b)
	}
	// Resuming is exact, and paging ends where the log ends.
	page = readLog(t, l, store.LogQuery{AnyTenant: true, After: 2, Limit: 1})
	if got := ids(page.Entries); !slices.Equal(got, []string{"02:1@3"}) || page.Reached != 3 {
		t.Fatalf("after 2, limit 1 = %v reached %d", got, page.Reached)
	}
	page = readLog(t, l, store.LogQuery{AnyTenant: true, After: 4})
	if len(page.Entries) != 0 || page.Reached != 4 {
		t.Fatalf("after the end = %v reached %d; want nothing, reached 4", ids(page.Entries), page.Reached)
	}
}

func testLogFilters(t *testing.T, s store.Store, l store.StreamLog) {
	a, b, c := executionID(1), executionID(2), executionID(3)
	convA, convB := conversationID(1), conversationID(2)
	commit(t, s, &store.Batch{Events: []store.StoredEvent{
		scoped(a, 1, api.StandardEventTypeRunQueued, "acme", convA, "mock"),
		scoped(b, 1, api.StandardEventTypeRunQueued, "other", convB, "acp"),
		scoped(a, 2, api.StandardEventTypeOutputTextDelta, "acme", convA, "mock"),
		scoped(c, 1, api.StandardEventTypeRunQueued, "acme", convA, "acp"),
		scoped(b, 2, api.StandardEventTypeRunCompleted, "other", convB, "acp"),
		scoped(a, 3, api.StandardEventTypeRunCompleted, "acme", convA, "mock"),
	}})
	page := readLog(t, l, store.LogQuery{Tenant: "acme"})
	if got, want := ids(page.Entries), []string{"01:1@1", "01:2@3", "03:1@4", "01:3@6"}; !slices.Equal(got, want) || page.Reached != 6 {
		t.Errorf("tenant acme = %v reached %d; want %v reached 6", got, page.Reached, want)
	}
	if page := readLog(t, l, store.LogQuery{Tenant: ""}); len(page.Entries) != 0 || page.Reached != 6 {
		t.Errorf("the anonymous tenant sees %v (reached %d); want nothing of the named tenants", ids(page.Entries), page.Reached)
	}
	page = readLog(t, l, store.LogQuery{ConversationID: convB, Tenant: "other"})
	if got, want := ids(page.Entries), []string{"02:1@2", "02:2@5"}; !slices.Equal(got, want) || page.Reached != 6 {
		t.Errorf("conversation B = %v reached %d; want %v reached 6", got, page.Reached, want)
	}
	// After a cursor inside the conversation's last index block (the last key of the index).
	page = readLog(t, l, store.LogQuery{ConversationID: convB, Tenant: "other", After: 3})
	if got, want := ids(page.Entries), []string{"02:2@5"}; !slices.Equal(got, want) || page.Reached != 6 {
		t.Errorf("conversation B after 3 = %v reached %d; want %v reached 6", got, page.Reached, want)
	}
	if page := readLog(t, l, store.LogQuery{ConversationID: convB, Tenant: "acme"}); len(page.Entries) != 0 {
		t.Errorf("conversation B read as tenant acme = %v; want nothing", ids(page.Entries))
	}
	lifecycle := func(e *store.LogEntry) bool { return e.Event.Type != api.StandardEventTypeOutputTextDelta }
	page = readLog(t, l, store.LogQuery{ConversationID: convA, Tenant: "acme", Match: lifecycle, After: 1})
	if got, want := ids(page.Entries), []string{"03:1@4", "01:3@6"}; !slices.Equal(got, want) {
		t.Errorf("conversation A after 1 without deltas = %v; want %v", got, want)
	}
	acp := func(e *store.LogEntry) bool { return e.Scope.ProviderID == "acp" }
	page = readLog(t, l, store.LogQuery{AnyTenant: true, Match: acp, Limit: 1})
	if got := ids(page.Entries); !slices.Equal(got, []string{"02:1@2"}) || page.Reached != 2 {
		t.Errorf("provider acp, limit 1 = %v reached %d", got, page.Reached)
	}
	// A narrow filter stops after Scan entries and says how far it looked.
	none := func(*store.LogEntry) bool { return false }
	page = readLog(t, l, store.LogQuery{AnyTenant: true, Match: none, Limit: 1, Scan: 4})
	if len(page.Entries) != 0 || page.Reached != 4 {
		t.Errorf("a filter matching nothing, scan 4 = %v reached %d; want nothing, reached 4", ids(page.Entries), page.Reached)
	}
}

func testLogObserver(t *testing.T, s store.Store, l store.StreamLog) {
	var mu sync.Mutex
	var seen []store.LogEntry
	l.ObserveLog(func(entries []store.LogEntry) {
		mu.Lock()
		seen = append(seen, entries...)
		mu.Unlock()
	})
	defer l.ObserveLog(nil)
	x := executionID(1)
	commit(t, s, &store.Batch{Events: deltas(x, 1, 3)})
	commit(t, s, &store.Batch{Executions: []store.Execution{execution(1, 1, api.ExecutionStateQueued, "")}}) // no event: no entry
	done := make(chan error, 1)
	if err := s.Submit(&store.Request{Batch: &store.Batch{Events: deltas(x, 4, 5)}, Done: func(err error) {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if err == nil && n != 5 {
			err = fmt.Errorf("Done ran with %d entries observed; the observer runs first", n)
		}
		done <- err
	}}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	page := readLog(t, l, store.LogQuery{AnyTenant: true})
	if got, want := ids(seen), ids(page.Entries); !slices.Equal(got, want) || len(got) != 5 {
		t.Fatalf("observed %v; the log holds %v", got, want)
	}
}

func testLogConcurrent(t *testing.T, s store.Store, l store.StreamLog) {
	const writers, each = 8, 40
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := executionID(w + 1)
			for seq := int64(1); seq <= each; seq++ {
				if err := s.Commit(&store.Batch{Events: []store.StoredEvent{event(id, seq, api.StandardEventTypeOutputTextDelta)}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var all []store.LogEntry
	for after := int64(0); ; {
		page := readLog(t, l, store.LogQuery{AnyTenant: true, After: after, Limit: 7})
		if len(page.Entries) == 0 {
			break
		}
		all = append(all, page.Entries...)
		after = page.Reached
	}
	if len(all) != writers*each {
		t.Fatalf("%d entries; want %d", len(all), writers*each)
	}
	last := map[string]int64{}
	for i, e := range all {
		if e.Position != int64(i+1) {
			t.Fatalf("entry %d has position %d: the positions have a gap", i, e.Position)
		}
		if e.Event.Sequence != last[e.ExecutionID]+1 {
			t.Fatalf("%s:%d at %d follows sequence %d: the log is not in commit order", e.ExecutionID, e.Event.Sequence, e.Position, last[e.ExecutionID])
		}
		last[e.ExecutionID] = e.Event.Sequence
	}
}

func testLogFailedBatch(t *testing.T, s store.Store, l store.StreamLog) {
	key := "k"
	first := execution(1, 1, api.ExecutionStateQueued, "")
	first.IdempotencyKey = &key
	commit(t, s, &store.Batch{Executions: []store.Execution{first}, Idempotency: []store.Idempotency{{ConversationID: conversationID(1), Key: key, ExecutionID: first.Execution.ID}},
		Events: []store.StoredEvent{event(first.Execution.ID, 1, api.StandardEventTypeRunQueued)}})
	second := execution(2, 1, api.ExecutionStateQueued, "")
	err := s.Commit(&store.Batch{Executions: []store.Execution{second}, Idempotency: []store.Idempotency{{ConversationID: conversationID(1), Key: key, ExecutionID: second.Execution.ID}},
		Events: []store.StoredEvent{event(second.Execution.ID, 1, api.StandardEventTypeRunQueued)}})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second binding of the key: %v; want ErrConflict", err)
	}
	commit(t, s, &store.Batch{Events: []store.StoredEvent{event(first.Execution.ID, 2, api.StandardEventTypeRunStarted)}})
	page := readLog(t, l, store.LogQuery{AnyTenant: true})
	if got, want := ids(page.Entries), []string{"01:1@1", "01:2@2"}; !slices.Equal(got, want) {
		t.Fatalf("log = %v; want %v (the refused batch takes no position)", got, want)
	}
}

func testLogDeletions(t *testing.T, s store.Store, l store.StreamLog) {
	gone, kept := execution(1, 1, api.ExecutionStateSucceeded, ""), execution(2, 1, api.ExecutionStateSucceeded, "")
	commit(t, s, &store.Batch{Executions: []store.Execution{gone, kept}, Events: []store.StoredEvent{
		scoped(gone.Execution.ID, 1, api.StandardEventTypeRunQueued, "", conversationID(1), "mock"),
		scoped(kept.Execution.ID, 1, api.StandardEventTypeRunQueued, "", conversationID(1), "mock"),
	}})
	commit(t, s, &store.Batch{Deletions: []store.Execution{gone}})
	for _, q := range []store.LogQuery{{AnyTenant: true}, {ConversationID: conversationID(1)}} {
		page := readLog(t, l, q)
		if got := ids(page.Entries); !slices.Equal(got, []string{"02:1@2"}) || page.Reached != 2 {
			t.Errorf("%+v after a deletion = %v reached %d; want only the kept execution's event", q, got, page.Reached)
		}
	}
}

func testLogTrim(t *testing.T, s store.Store, l store.StreamLog) {
	x := executionID(1)
	commit(t, s, &store.Batch{Events: []store.StoredEvent{scoped(x, 1, api.StandardEventTypeRunQueued, "", conversationID(1), "mock"), scoped(x, 2, api.StandardEventTypeRunStarted, "", conversationID(1), "mock")}})
	time.Sleep(20 * time.Millisecond) // commit times are kept to the millisecond
	cut := time.Now()
	time.Sleep(20 * time.Millisecond)
	commit(t, s, &store.Batch{Events: []store.StoredEvent{scoped(x, 3, api.StandardEventTypeRunCompleted, "", conversationID(1), "mock")}})
	b, err := l.TrimLog(cut)
	if err != nil || b != (store.LogBounds{Oldest: 3, Last: 3}) {
		t.Fatalf("TrimLog = %+v, %v; want {3 3}", b, err)
	}
	for _, q := range []store.LogQuery{{AnyTenant: true}, {ConversationID: conversationID(1)}, {AnyTenant: true, After: 1}} {
		if _, err := l.ReadLog(q); !errors.Is(err, store.ErrCursorExpired) {
			t.Errorf("ReadLog(%+v) after the trim: %v; want ErrCursorExpired", q, err)
		}
	}
	for _, q := range []store.LogQuery{{AnyTenant: true, After: 2}, {ConversationID: conversationID(1), After: 2}} {
		page := readLog(t, l, q)
		if got := ids(page.Entries); !slices.Equal(got, []string{"01:3@3"}) {
			t.Errorf("ReadLog(%+v) after the trim = %v; want the kept entry", q, got)
		}
	}
	// Trimming everything keeps the numbering: the next entry is 4, and reads from 3 are whole.
	if b, err := l.TrimLog(time.Now().Add(time.Hour)); err != nil || b != (store.LogBounds{Oldest: 4, Last: 3}) {
		t.Fatalf("TrimLog of everything = %+v, %v; want {4 3}", b, err)
	}
	commit(t, s, &store.Batch{Events: []store.StoredEvent{scoped(executionID(2), 1, api.StandardEventTypeRunQueued, "", conversationID(1), "mock")}})
	page := readLog(t, l, store.LogQuery{ConversationID: conversationID(1), After: 3})
	if got := ids(page.Entries); !slices.Equal(got, []string{"02:1@4"}) {
		t.Errorf("after trimming everything, the next entry = %v; want position 4", got)
	}
}

// A commit of more events than one block holds, spread over many conversations, read back
// from every cursor: whole, in order, by conversation and overall.
func testLogLargeCommits(t *testing.T, s store.Store, l store.StreamLog) {
	const convs, perExec = 7, 300
	var events []store.StoredEvent
	for seq := int64(1); seq <= perExec; seq++ {
		for c := 1; c <= convs; c++ {
			events = append(events, scoped(executionID(c), seq, api.StandardEventTypeOutputTextDelta, "", conversationID(c), "mock"))
		}
	}
	commit(t, s, &store.Batch{Events: events[:len(events)/2]})
	commit(t, s, &store.Batch{Events: events[len(events)/2:]})
	// And a commit of many executions of one event each (stores may split it by size).
	var many []store.StoredEvent
	for x := 100; x < 400; x++ {
		many = append(many, scoped(executionID(x), 1, api.StandardEventTypeRunQueued, "tenant-with-a-long-name", conversationID(x), "a-provider"))
	}
	commit(t, s, &store.Batch{Events: many})
	events = append(events, many...)
	total := int64(len(events))
	for _, after := range []int64{0, 1, 511, 512, 513, 1024, 2099, 2100, 2101, 2250, total - 1, total} {
		page := readLog(t, l, store.LogQuery{AnyTenant: true, After: after, Limit: 3})
		if after == total {
			if len(page.Entries) != 0 || page.Reached != total {
				t.Fatalf("after the end: %v reached %d", ids(page.Entries), page.Reached)
			}
			continue
		}
		if len(page.Entries) == 0 || page.Entries[0].Position != after+1 {
			t.Fatalf("after %d: %v", after, ids(page.Entries))
		}
		e, want := page.Entries[0], events[after]
		if e.ExecutionID != want.ExecutionID || e.Event.Sequence != want.Event.Sequence || e.Scope != *want.Scope || e.Event.Type != want.Event.Type {
			t.Fatalf("position %d holds %s:%d; want %s:%d", after+1, e.ExecutionID, e.Event.Sequence, want.ExecutionID, want.Event.Sequence)
		}
	}
	for c := 1; c <= convs; c++ {
		var got []store.LogEntry
		for after := int64(0); ; {
			page := readLog(t, l, store.LogQuery{ConversationID: conversationID(c), After: after, Limit: 97})
			if len(page.Entries) == 0 {
				break
			}
			got = append(got, page.Entries...)
			after = page.Reached
		}
		if len(got) != perExec {
			t.Fatalf("conversation %d: %d entries; want %d", c, len(got), perExec)
		}
		for i, e := range got {
			if e.ExecutionID != executionID(c) || e.Event.Sequence != int64(i+1) || e.Position != int64(i*convs+c) {
				t.Fatalf("conversation %d entry %d = %s:%d@%d", c, i, e.ExecutionID, e.Event.Sequence, e.Position)
			}
		}
	}
}

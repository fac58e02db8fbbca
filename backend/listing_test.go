package backend_test

import (
	"cmp"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// listAll pages through a listing with the given page size and returns every execution, failing
// on a repeated execution or a cursor on an empty page.
func listAll(t *testing.T, rt *backend.Runtime, f backend.ExecutionFilter) []api.Execution {
	t.Helper()
	var all []api.Execution
	seen := map[string]bool{}
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("listing does not end")
		}
		page, err := rt.ListExecutions(ctxT(t), f)
		if err != nil {
			t.Fatalf("ListExecutions(%+v): %v", f, err)
		}
		if len(page.Executions) > cmp.Or(f.Limit, backend.DefaultListLimit) {
			t.Fatalf("page of %d executions, limit %d", len(page.Executions), f.Limit)
		}
		if page.NextCursor != "" && len(page.Executions) == 0 {
			t.Fatalf("empty page with a cursor")
		}
		for _, e := range page.Executions {
			if seen[e.ID] {
				t.Fatalf("execution %s listed twice", e.ID)
			}
			seen[e.ID] = true
		}
		all = append(all, page.Executions...)
		if page.NextCursor == "" {
			return all
		}
		f.After = page.NextCursor
	}
}

func ids(execs []api.Execution) []string {
	out := make([]string, len(execs))
	for i, e := range execs {
		out[i] = e.ID
	}
	return out
}

// newestFirst sorts as the listing promises: createdAt descending, then id descending.
func newestFirst(execs []api.Execution) []string {
	sorted := slices.Clone(execs)
	slices.SortFunc(sorted, func(a, b api.Execution) int {
		return cmp.Or(cmp.Compare(b.CreatedAt, a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	return ids(sorted)
}

// runToEnd starts an execution on the mock and waits until it is terminal.
func runToEnd(t *testing.T, rt *backend.Runtime, conv, input string) api.Execution {
	t.Helper()
	exec := start(t, rt, conv, startOpts{input: input})
	_, final := finalOf(t, rt, exec.ID)
	return final
}

func TestListExecutionsNewestFirstAcrossPages(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	convA, convB := newConversation(t, rt), newConversation(t, rt)
	var all, inA []api.Execution
	for i := range 11 {
		conv := convA
		if i%3 == 0 {
			conv = convB
		}
		e := runToEnd(t, rt, conv, "run")
		all = append(all, e)
		if conv == convA {
			inA = append(inA, e)
		}
		if i == 5 {
			time.Sleep(2 * time.Millisecond) // at least two distinct creation milliseconds
		}
	}

	for _, limit := range []int{1, 3, 4, 11, 0} {
		got := listAll(t, rt, backend.ExecutionFilter{Limit: limit})
		if !slices.Equal(ids(got), newestFirst(all)) {
			t.Fatalf("limit %d: order %v, want %v", limit, ids(got), newestFirst(all))
		}
	}
	// One page holding everything has no cursor; a full page with more behind it has one.
	page, err := rt.ListExecutions(ctxT(t), backend.ExecutionFilter{Limit: len(all)})
	if err != nil || len(page.Executions) != len(all) || page.NextCursor != "" {
		t.Fatalf("exact page: %d executions, cursor %q, %v", len(page.Executions), page.NextCursor, err)
	}
	page, err = rt.ListExecutions(ctxT(t), backend.ExecutionFilter{Limit: len(all) - 1})
	if err != nil || page.NextCursor == "" {
		t.Fatalf("page short of the end has no cursor: %v", err)
	}

	// Per conversation: only its executions, in the same order.
	got := listAll(t, rt, backend.ExecutionFilter{ConversationID: convA, Limit: 2})
	if !slices.Equal(ids(got), newestFirst(inA)) {
		t.Fatalf("conversation A: %v, want %v", ids(got), newestFirst(inA))
	}
	// The snapshot listed is the one GetExecution answers.
	for _, e := range got {
		if want := getExecution(t, rt, e.ID); !reflect.DeepEqual(e, want) {
			t.Fatalf("listed %+v, GetExecution %+v", e, want)
		}
	}
	// A conversation without executions lists nothing; an unknown one is NOT_FOUND.
	empty := newConversation(t, rt)
	if page, err := rt.ListExecutions(ctxT(t), backend.ExecutionFilter{ConversationID: empty}); err != nil || len(page.Executions) != 0 || page.NextCursor != "" {
		t.Fatalf("empty conversation: %+v %v", page, err)
	}
	_, err = rt.ListExecutions(ctxT(t), backend.ExecutionFilter{ConversationID: "conv_unknown"})
	wantCode(t, err, backend.CodeNotFound, "Conversation not found: conv_unknown")
}

func TestListExecutionsFiltersByLiveState(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	conv := newConversation(t, rt)
	done := runToEnd(t, rt, conv, "done")
	waiting := start(t, rt, conv, startOpts{input: "wait", config: api.JSONObject{"requireApproval": true}})
	actionID := typed(waitForEvent(t, rt, waiting.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest()).ID
	asking := start(t, rt, conv, startOpts{input: "ask", config: api.JSONObject{"requestInput": true}})
	waitForEvent(t, rt, asking.ID, api.StandardEventTypeActionRequired)

	byState := func(states ...api.ExecutionState) []string {
		return ids(listAll(t, rt, backend.ExecutionFilter{States: states, Limit: 1}))
	}
	if got := byState(api.ExecutionStateAwaitingApproval); !slices.Equal(got, []string{waiting.ID}) {
		t.Fatalf("awaiting_approval: %v, want [%s]", got, waiting.ID)
	}
	if got := byState(api.ExecutionStateAwaitingApproval, api.ExecutionStateAwaitingInput); !slices.Equal(got, []string{asking.ID, waiting.ID}) {
		t.Fatalf("awaiting_*: %v", got)
	}
	if got := byState(api.ExecutionStateSucceeded); !slices.Equal(got, []string{done.ID}) {
		t.Fatalf("succeeded: %v, want [%s]", got, done.ID)
	}
	if got := byState(api.ExecutionStateCancelled); len(got) != 0 {
		t.Fatalf("cancelled: %v, want none", got)
	}
	// The listed snapshot of a live execution is its current state, as GetExecution says.
	listed := listAll(t, rt, backend.ExecutionFilter{States: []api.ExecutionState{api.ExecutionStateAwaitingApproval}})
	if !reflect.DeepEqual(listed[0], getExecution(t, rt, waiting.ID)) {
		t.Fatalf("listed %+v, GetExecution %+v", listed[0], getExecution(t, rt, waiting.ID))
	}

	// A state change moves the execution between filters.
	if _, err := rt.RespondToAction(ctxT(t), waiting.ID, actionID, approve(true)); err != nil {
		t.Fatal(err)
	}
	finalOf(t, rt, waiting.ID)
	if got := byState(api.ExecutionStateAwaitingApproval); len(got) != 0 {
		t.Fatalf("awaiting_approval after the answer: %v", got)
	}
	if got := byState(api.ExecutionStateSucceeded); !slices.Equal(got, []string{waiting.ID, done.ID}) {
		t.Fatalf("succeeded after the answer: %v", got)
	}
}

func TestListExecutionsRejectsBadFilters(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	for _, tc := range []struct {
		name    string
		filter  backend.ExecutionFilter
		message string
		field   error // which field; the HTTP binding names its query parameter (proxy/listing_test.go)
	}{
		{"limit too large", backend.ExecutionFilter{Limit: backend.MaxListLimit + 1}, "limit must be an integer from 1 to 200", backend.ErrListLimit},
		{"negative limit", backend.ExecutionFilter{Limit: -1}, "limit must be an integer from 1 to 200", backend.ErrListLimit},
		{"unknown state", backend.ExecutionFilter{States: []api.ExecutionState{"done"}}, "", backend.ErrListState},
		{"cursor not base64", backend.ExecutionFilter{After: "not a cursor!"}, "after must be a nextCursor returned by this listing", backend.ErrListAfter},
		{"cursor too short", backend.ExecutionFilter{After: "AQ"}, "", backend.ErrListAfter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rt.ListExecutions(ctxT(t), tc.filter)
			wantCode(t, err, backend.CodeValidation, tc.message)
			if !errors.Is(err, tc.field) {
				t.Fatalf("%v is not %v", err, tc.field)
			}
		})
	}
	if page, err := rt.ListExecutions(ctxT(t), backend.ExecutionFilter{Limit: backend.MaxListLimit}); err != nil || page.Executions == nil {
		t.Fatalf("limit %d: %+v %v", backend.MaxListLimit, page, err)
	}
}

// TestListExecutionsBuildsTheIndexOfAnOldStore opens a store laid out as the version before
// the listing wrote it (no index buckets) and finds every execution.
func TestListExecutionsBuildsTheIndexOfAnOldStore(t *testing.T) {
	dir := t.TempDir()
	rt := openRuntime(t, dir, optsNone())
	conv := newConversation(t, rt)
	var all []api.Execution
	for range 5 {
		all = append(all, runToEnd(t, rt, conv, "before the upgrade"))
	}
	rt.Close()

	db, err := bolt.Open(filepath.Join(dir, local.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{"executions_by_time", "executions_by_conversation"} {
			if err := tx.DeleteBucket([]byte(name)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	rt = openRuntime(t, dir, optsNone())
	if got := listAll(t, rt, backend.ExecutionFilter{Limit: 2}); !slices.Equal(ids(got), newestFirst(all)) {
		t.Fatalf("after the upgrade: %v, want %v", ids(got), newestFirst(all))
	}
	if got := listAll(t, rt, backend.ExecutionFilter{ConversationID: conv}); !slices.Equal(ids(got), newestFirst(all)) {
		t.Fatalf("conversation after the upgrade: %v, want %v", ids(got), newestFirst(all))
	}
	// New executions are indexed as they are created, and reopening keeps the index.
	all = append(all, runToEnd(t, rt, conv, "after the upgrade"))
	rt.Close()
	rt = openRuntime(t, dir, optsNone())
	if got := listAll(t, rt, backend.ExecutionFilter{Limit: 4}); !slices.Equal(ids(got), newestFirst(all)) {
		t.Fatalf("after a reopen: %v, want %v", ids(got), newestFirst(all))
	}
}

// TestRetentionRemovesListingEntries deletes expired executions and checks that the listing
// forgets them (an index entry left behind would make the listing fail: it names a record that
// is gone) and that a cursor pointing at a deleted execution still continues.
func TestRetentionRemovesListingEntries(t *testing.T) {
	dir := t.TempDir()
	rt := openRuntime(t, dir, backend.Options{Retention: time.Hour})
	conv := newConversation(t, rt)
	var finished []api.Execution
	for range 4 {
		finished = append(finished, runToEnd(t, rt, conv, "expires"))
	}
	live := start(t, rt, conv, startOpts{input: "stays", config: api.JSONObject{"requireApproval": true}})
	waitForEvent(t, rt, live.ID, api.StandardEventTypeActionRequired)

	first, err := rt.ListExecutions(ctxT(t), backend.ExecutionFilter{Limit: 2}) // live, newest finished
	if err != nil || first.NextCursor == "" {
		t.Fatalf("first page: %+v %v", first, err)
	}
	if n, err := backend.SweepExpired(rt, time.Now().Add(2*time.Hour)); err != nil || n != len(finished) {
		t.Fatalf("sweep: %d %v", n, err)
	}
	for _, f := range []backend.ExecutionFilter{{}, {ConversationID: conv}} {
		if got := listAll(t, rt, f); !slices.Equal(ids(got), []string{live.ID}) {
			t.Fatalf("after retention (%+v): %v, want [%s]", f, ids(got), live.ID)
		}
	}
	// The first page ended at an execution that no longer exists: the next page is what is
	// older than it, which is nothing now.
	next, err := rt.ListExecutions(ctxT(t), backend.ExecutionFilter{After: first.NextCursor})
	if err != nil || len(next.Executions) != 0 || next.NextCursor != "" {
		t.Fatalf("page after a deleted execution: %+v %v", next, err)
	}
	rt.Close()

	// Nothing of the deleted executions is left in the index buckets.
	db, err := bolt.Open(filepath.Join(dir, local.FileName), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		for _, name := range []string{"executions_by_time", "executions_by_conversation"} {
			if n := tx.Bucket([]byte(name)).Stats().KeyN; n != 1 {
				t.Errorf("%s holds %d entries, want 1 (the live execution)", name, n)
			}
		}
		return nil
	})
}

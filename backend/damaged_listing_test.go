package backend_test

import (
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/internal/testutil"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// damageCounter is a metrics observer that counts reads of damaged records.
type damageCounter struct {
	executions, events atomic.Int64
}

func (*damageCounter) ExecutionStarted(string)                      {}
func (*damageCounter) ExecutionFinished(string, api.ExecutionState) {}
func (*damageCounter) EventsAppended(int)                           {}
func (*damageCounter) StoreCommit(time.Duration)                    {}
func (c *damageCounter) StoredRecordUndecodable(kind backend.DamagedRecord) {
	if kind == backend.DamagedExecution {
		c.executions.Add(1)
	} else {
		c.events.Add(1)
	}
}

// Issue 24: one execution record that cannot be decoded (damaged on disk, here overwritten in
// the real bbolt file) made every listing answer INTERNAL_ERROR, and so the console. Now the
// listings skip it and serve everything else, across pages, in order; the log names it once
// however many listings pass it, and the metric counts each one.
func TestUndecodableRecordIsLeftOutOfListings(t *testing.T) {
	dir := t.TempDir()
	rt := openRuntime(t, dir, optsNone())
	conv := newConversation(t, rt)
	var all []api.Execution
	for i := range 7 {
		all = append(all, runToEnd(t, rt, conv, "listed "+strings.Repeat("x", i+1)))
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	damaged := all[3]
	putRaw(t, dir, "executions", map[string][]byte{damaged.ID: []byte(`X"execution":{"id":"` + damaged.ID + `"}}`)})
	want := slices.DeleteFunc(newestFirst(all), func(id string) bool { return id == damaged.ID })

	var logs testutil.LockedBuffer
	metric := &damageCounter{}
	opts := optsNone()
	opts.Logger, opts.Observer = slog.New(slog.NewTextHandler(&logs, nil)), metric
	rt = openRuntime(t, dir, opts)
	atOpen := metric.executions.Load() // recovery walks the records and meets it first

	for _, f := range []backend.ExecutionFilter{{}, {Limit: 2}, {Limit: 1}, {ConversationID: conv, Limit: 3}, {States: []api.ExecutionState{api.ExecutionStateSucceeded}}} {
		if got := ids(listAll(t, rt, f)); !slices.Equal(got, want) {
			t.Fatalf("listing %+v:\n got %v\nwant %v", f, got, want)
		}
	}
	before := metric.executions.Load()
	const listings = 5
	for range listings {
		if _, err := rt.ListExecutions(ctxT(t), backend.ExecutionFilter{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := metric.executions.Load() - before; n != listings {
		t.Fatalf("the metric counted %d skips in %d one-page listings, want one each", n, listings)
	}
	if atOpen < 1 {
		t.Fatal("recovery did not count the damaged record")
	}
	_, err := rt.GetExecution(ctxT(t), damaged.ID)
	if e := wantCode(t, err, backend.CodeInternal, ""); !e.Logged() {
		t.Fatal("the error of a damaged record does not say it was logged")
	}
	if n := strings.Count(logs.String(), "execution="+damaged.ID); n != 1 {
		t.Fatalf("%d log lines name the damaged record, want 1:\n%s", n, logs.String())
	}
}

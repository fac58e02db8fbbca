package clustertest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// takeoverSize is how many running executions the dead node leaves: a few hundred in the
// ordinary run, HARNESS_TAKEOVER_N for the figures of docs/scale-out.md (10,000 there).
func takeoverSize(t *testing.T) int {
	if v := os.Getenv("HARNESS_TAKEOVER_N"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("HARNESS_TAKEOVER_N=%q: want a positive integer", v)
		}
		return n
	}
	return 400
}

// A node dies holding many running executions. The survivor takes them over — every one
// failed exactly once, naming the dead node — in batches beside its own lease renewals: its
// own executions keep running, it stays ready, and it accepts starts all along.
func TestTakeoverOfManyLeavesTheSurvivorAlone(t *testing.T) {
	n := takeoverSize(t)
	p := &blocker{}
	b := startCluster(t, clusterOpts{providers: func() []backend.Provider { return []backend.Provider{p} }}, "b")[0]
	conv := newConversation(t, b)
	var own []string
	for i := range 10 {
		own = append(own, start(t, b, api.StartExecutionRequest{ConversationID: conv, ProviderID: blockerID, Input: fmt.Sprint(i)}).ID)
	}

	// The dead node: its lease, and n running executions written under it, as a node that was
	// killed mid-run leaves them.
	ctx := ctxT(t)
	dead, err := postgres.Open(ctx, postgres.Config{DSN: b.dsn, Node: "dead"})
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := dead.AcquireLease(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	const perBatch = 500
	for from := 0; from < n; from += perBatch {
		batch := &store.Batch{Lease: epoch}
		for i := from; i < min(from+perBatch, n); i++ {
			ids[i] = fmt.Sprintf("exec_%032x", i+1)
			at := "2026-12-01T00:00:00.000Z"
			batch.Executions = append(batch.Executions, store.Execution{Execution: api.Execution{
				ID: ids[i], ConversationID: conv, ProviderID: blockerID, State: api.ExecutionStateRunning, Input: "x",
				RequiredCapabilities: []string{}, EffectiveConfig: api.JSONObject{}, CreatedAt: at, UpdatedAt: at,
			}, Owner: "dead"})
			for seq, typ := range []api.StandardEventType{api.StandardEventTypeRunQueued, api.StandardEventTypeRunStarted} {
				raw := fmt.Sprintf(`{"data":{},"executionId":%q,"id":"%s:%d","sequence":%d,"time":%q,"type":%q}`, ids[i], ids[i], seq+1, seq+1, at, typ)
				e, err := store.EventFromJSON([]byte(raw))
				if err != nil {
					t.Fatal(err)
				}
				batch.Events = append(batch.Events, store.StoredEvent{ExecutionID: ids[i], Event: e})
			}
		}
		if err := dead.Commit(batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := dead.RenewLease(ctx, epoch, time.Millisecond); err != nil { // it stops renewing
		t.Fatal(err)
	}
	dead.Close()
	expired := time.Now()

	db, err := pgx.Connect(ctx, b.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())

	// Until every one of them is failed, b keeps accepting starts and stays ready.
	accepted := 0
	deadline := time.Now().Add(2*time.Minute + time.Duration(n)*10*time.Millisecond)
	for remaining := n; remaining > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d executions still not taken over", remaining, n)
		}
		if err := b.rt.Ready(ctx); err != nil {
			t.Fatalf("the survivor is not ready during the takeover: %v", err)
		}
		start(t, b, mockRequestOrBlocker(conv))
		accepted++
		if err := db.QueryRow(ctx, `SELECT count(*) FROM executions WHERE id = ANY($1) AND state <> 'failed'`, ids).Scan(&remaining); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(expired)
	t.Logf("took over %d executions in %s after the lease expired (lease %s); %d starts accepted meanwhile", n, took.Round(time.Millisecond), testLease, accepted)

	want := "Node dead stopped before the execution finished"
	for _, id := range ids[:min(n, 50)] {
		events := follow(t, b, id, 0)
		checkComplete(t, id, events)
		if len(events) != 3 || events[2].Type != api.StandardEventTypeRunFailed || !strings.Contains(string(events[2].JSON), want) {
			t.Fatalf("%s: %s; want one run.failed naming the dead node after its two events", id, typesOf(events))
		}
	}
	for _, id := range own {
		rec, err := b.rt.GetExecution(context.Background(), id)
		if err != nil || rec.State != api.ExecutionStateRunning {
			t.Fatalf("the survivor's own execution %s is %s (%v) after the takeover, want still running", id, rec.State, err)
		}
	}
}

// mockRequestOrBlocker is a start the blocker provider takes (the survivor has only it).
func mockRequestOrBlocker(conv string) api.StartExecutionRequest {
	return api.StartExecutionRequest{ConversationID: conv, ProviderID: blockerID, Input: "during the takeover"}
}

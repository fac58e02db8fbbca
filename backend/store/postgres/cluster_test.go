package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Two nodes opening a fresh database at the same moment both succeed, and the schema is
// applied once (goose's advisory lock): the loser of the lock finds nothing left to do.
func TestOpenTogetherMigratesOnce(t *testing.T) {
	dsn := newDatabase(t)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			s, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, Node: fmt.Sprintf("node-%d", i)})
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var applied int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM harness_schema_version WHERE version_id = 1 AND is_applied`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if applied != 1 {
		t.Fatalf("migration 1 recorded %d times, want once", applied)
	}
}

// 50 identical idempotent starts spread over two nodes: the database's unique key lets exactly
// one commit; every other fails with ErrConflict and applies nothing of its batch.
func TestIdempotencyRaceAcrossNodes(t *testing.T) {
	dsn := newDatabase(t)
	nodes := []*postgres.Store{open(t, dsn, "a"), open(t, dsn, "b")}
	const starts = 50
	errs := make([]error, starts)
	var wg sync.WaitGroup
	ready := make(chan struct{})
	for i := range starts {
		wg.Go(func() {
			rec := execution(100+i, api.ExecutionStateQueued, nodes[i%2].Node())
			key := "same-key"
			rec.IdempotencyKey = &key
			<-ready
			errs[i] = nodes[i%2].Commit(&store.Batch{
				Executions:  []store.Execution{rec},
				Events:      []store.StoredEvent{event(rec.Execution.ID, 1, api.StandardEventTypeRunQueued)},
				Idempotency: []store.Idempotency{{ConversationID: conversationID(1), Key: key, Fingerprint: "f", ExecutionID: rec.Execution.ID}},
			})
		})
	}
	close(ready)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("starts %d and %d both committed", winner, i)
			}
			winner = i
		case !errors.Is(err, store.ErrConflict):
			t.Fatalf("start %d: %v, want ErrConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no start committed")
	}
	idem, found, err := nodes[0].Idempotency("", conversationID(1), "same-key")
	if err != nil || !found || idem.ExecutionID != executionID(100+winner) {
		t.Fatalf("idempotency record: %+v, %v, %v; want the winner %s", idem, found, err, executionID(100+winner))
	}
	for i := range starts {
		_, found, err := nodes[1].Execution(executionID(100 + i))
		if err != nil || found != (i == winner) {
			t.Fatalf("execution of start %d stored: %v (%v); only the winner's may be", i, found, err)
		}
	}
}

// A commit on one node wakes Watch on the other (and on itself) with the execution and its last
// sequence, once the events are readable.
func TestWatchAcrossNodes(t *testing.T) {
	dsn := newDatabase(t)
	a, b := open(t, dsn, "a"), open(t, dsn, "b")
	onA, onB := watch(t, a), watch(t, b)
	id := executionID(1)
	commit(t, b, &store.Batch{
		Executions: []store.Execution{execution(1, api.ExecutionStateRunning, "b")},
		Events:     []store.StoredEvent{event(id, 1, api.StandardEventTypeRunQueued), event(id, 2, api.StandardEventTypeRunStarted)},
	})
	for name, ch := range map[string]notices{"a": onA, "b": onB} {
		n := ch.await(t, "events of "+id+" on node "+name, func(n store.Notice) bool { return n.Kind == store.NoticeEvents })
		if n.ExecutionID != id || n.Sequence != 2 {
			t.Fatalf("node %s: notice %+v, want %s up to 2", name, n, id)
		}
		if got, err := a.Events(id, 0, 0); err != nil || len(got) != 2 {
			t.Fatalf("node a reads %d events after the notice (%v)", len(got), err)
		}
	}
}

// A dropped LISTEN connection loses notices, so after reconnecting the watcher sends a
// catch-all notice (ExecutionID "") that makes receivers re-read.
func TestWatchCatchAllAfterReconnect(t *testing.T) {
	dsn := newDatabase(t)
	a := open(t, dsn, "a")
	onA := watch(t, a)
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// Cut the listening connection (and only it) from the server side.
	var cut int
	if err := conn.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query ILIKE 'listen%'`).Scan(&cut); err != nil || cut != 1 {
		t.Fatalf("terminated %d listening connections (%v), want 1", cut, err)
	}
	onA.await(t, "catch-all after the reconnect", func(n store.Notice) bool { return n.Kind == store.NoticeEvents && n.ExecutionID == "" })
	// And it listens again.
	commit(t, a, &store.Batch{Events: []store.StoredEvent{event(executionID(2), 1, api.StandardEventTypeRunQueued)}})
	onA.await(t, "events after the reconnect", func(n store.Notice) bool { return n.ExecutionID == executionID(2) })
}

// A command posted on one node reaches its owner (notice + PendingCommands), and the answer
// reaches the poster (notice + CommandResult). Only the first answer counts.
func TestCommandRoundTrip(t *testing.T) {
	dsn := newDatabase(t)
	poster, owner := open(t, dsn, "poster"), open(t, dsn, "owner")
	onPoster, onOwner := watch(t, poster), watch(t, owner)
	ctx := context.Background()
	id, err := poster.PostCommand(ctx, store.Command{Node: "owner", Kind: store.CommandRespond, ExecutionID: executionID(1), ActionID: "action_1", Body: []byte(`{"approved":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	if n := onOwner.await(t, "command on the owner", func(n store.Notice) bool { return n.Kind == store.NoticeCommand }); n.CommandID != id {
		t.Fatalf("owner got command notice %+v, want id %d", n, id)
	}
	if mine, err := poster.PendingCommands(ctx); err != nil || len(mine) != 0 {
		t.Fatalf("the poster has %d pending commands (%v): commands go to their node only", len(mine), err)
	}
	pending, err := owner.PendingCommands(ctx)
	if err != nil || len(pending) != 1 {
		t.Fatalf("owner's pending commands: %+v, %v", pending, err)
	}
	c := pending[0]
	if c.ID != id || c.Node != "owner" || c.Kind != store.CommandRespond || c.ExecutionID != executionID(1) || c.ActionID != "action_1" || string(c.Body) != `{"approved":true}` {
		t.Fatalf("pending command %+v", c)
	}
	if _, answered, err := poster.CommandResult(ctx, id); err != nil || answered {
		t.Fatalf("answered before the owner answered: %v, %v", answered, err)
	}
	if err := owner.AnswerCommand(ctx, id, []byte("first")); err != nil {
		t.Fatal(err)
	}
	if n := onPoster.await(t, "result on the poster", func(n store.Notice) bool { return n.Kind == store.NoticeResult }); n.CommandID != id {
		t.Fatalf("poster got result notice %+v, want id %d", n, id)
	}
	if err := owner.AnswerCommand(ctx, id, []byte("second")); err != nil {
		t.Fatalf("a repeated answer: %v", err)
	}
	if result, answered, err := poster.CommandResult(ctx, id); err != nil || !answered || string(result) != "first" {
		t.Fatalf("CommandResult = %q, %v, %v; want the first answer", result, answered, err)
	}
	if pending, _ := owner.PendingCommands(ctx); len(pending) != 0 {
		t.Fatalf("an answered command is still pending: %+v", pending)
	}
	if _, _, err := poster.CommandResult(ctx, id+1000); err == nil {
		t.Fatal("CommandResult of an unknown command succeeded")
	}
}

// The PostgreSQL store cannot write a backup file: it says what to use instead.
func TestBackupPointsToPgDump(t *testing.T) {
	s := open(t, newDatabase(t), "a")
	_, err := s.Backup(&strings.Builder{})
	if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "pg_dump") {
		t.Fatalf("Backup: %v; want ErrUnsupported naming pg_dump", err)
	}
}

// The receiver's protocol — wake on a notice, read the rows after your cursor — gets every
// event exactly once on another node even when the notices of the last commits are lost: the
// listening connection is cut just before them, and only the catch-all after the reconnect
// tells the follower to look again.
func TestFollowerOnOtherNodeLosesNothingWhenNoticesAreLost(t *testing.T) {
	dsn := newDatabase(t)
	owner, other := open(t, dsn, "owner"), open(t, dsn, "other")
	id := executionID(1)
	wake := make(chan struct{}, 1)
	stop := other.Watch(func(n store.Notice) {
		if n.Kind == store.NoticeEvents && (n.ExecutionID == id || n.ExecutionID == "") {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	})
	defer stop()
	got := make(chan []int64, 1)
	go func() { // the follower on the other node
		var seen []int64
		cursor := int64(0)
		timeout := time.After(30 * time.Second)
		for cursor < 200 {
			select {
			case <-wake:
			case <-timeout:
				got <- seen
				return
			}
			events, err := other.Events(id, cursor, 0)
			if err != nil {
				t.Error(err)
			}
			for _, e := range events {
				seen = append(seen, e.Sequence)
				cursor = e.Sequence
			}
		}
		got <- seen
	}()
	appendEvents := func(from, to int64) {
		var b store.Batch
		for seq := from; seq <= to; seq++ {
			b.Events = append(b.Events, event(id, seq, api.StandardEventTypeOutputTextDelta))
		}
		commit(t, owner, &b)
	}
	for from := int64(1); from <= 190; from += 10 {
		appendEvents(from, from+9)
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// Cut the listening connections (pgxlisten waits a second before reconnecting), then commit
	// the rest at once: their notices go to nobody.
	if _, err := conn.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query ILIKE 'listen%'`); err != nil {
		t.Fatal(err)
	}
	appendEvents(191, 200)
	seen := <-got
	if len(seen) != 200 {
		t.Fatalf("the follower saw %d events, want 200", len(seen))
	}
	for i, seq := range seen {
		if seq != int64(i+1) {
			t.Fatalf("event %d is sequence %d: lost or repeated", i, seq)
		}
	}
}

// Renewing a lease prunes commands older than CommandRetention, answered or not, and keeps
// recent ones.
func TestRenewLeasePrunesOldCommands(t *testing.T) {
	dsn := newDatabase(t)
	s := open(t, dsn, "node-a")
	ctx := context.Background()
	var ids []int64
	for i := range 2 {
		id, err := s.PostCommand(ctx, store.Command{Node: "node-gone", Kind: store.CommandCancel, ExecutionID: executionID(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE commands SET created_at = now() - interval '2 hours' WHERE id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	epoch, err := s.AcquireLease(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RenewLease(ctx, epoch, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CommandResult(ctx, ids[0]); err == nil {
		t.Fatal("a command two hours old survived the renewal")
	}
	if _, answered, err := s.CommandResult(ctx, ids[1]); err != nil || answered {
		t.Fatalf("a fresh command: answered %v, %v; want kept and unanswered", answered, err)
	}
}

// A terminal execution row is final: a later put of the same execution (a node taken for dead
// writing a late state change) leaves it as it is.
func TestTerminalExecutionRowIsFinal(t *testing.T) {
	s := open(t, newDatabase(t), "node-a")
	rec := store.Execution{Execution: api.Execution{ID: executionID(1), ConversationID: "conv_1", ProviderID: "mock",
		State: api.ExecutionStateFailed, CreatedAt: "2026-11-30T00:00:00.000Z", UpdatedAt: "2026-11-30T00:00:01.000Z"}, Owner: "node-a"}
	if err := s.Commit(&store.Batch{Executions: []store.Execution{rec}}); err != nil {
		t.Fatal(err)
	}
	late := rec
	late.Execution.State = api.ExecutionStateCancelling
	if err := s.Commit(&store.Batch{Executions: []store.Execution{late}}); err != nil {
		t.Fatal(err)
	}
	got, found, err := s.Execution(rec.Execution.ID)
	if err != nil || !found || got.Execution.State != api.ExecutionStateFailed {
		t.Fatalf("after a late put: %+v, %v, %v; want the failed record kept", got.Execution.State, found, err)
	}
}

// A transaction of a node whose network went silent in the middle of a commit — begun, its
// fence taken (a share lock on the node's lease row), nothing more arriving — is ended by the
// server within the store's timeout, so another node claims the node once its lease expired,
// rather than waiting for the server's TCP keepalive (two hours by default) to drop it.
func TestSilentTransactionDoesNotHoldOffTheClaim(t *testing.T) {
	dsn := newDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := postgres.Open(ctx, postgres.Config{DSN: dsn, Node: "a", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := open(t, dsn, "b") // its calls wait 5 s at most (the default timeout)
	epoch, err := a.AcquireLease(ctx, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	release, err := a.HoldFence(ctx, epoch)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	time.Sleep(200 * time.Millisecond) // a's lease expires
	if _, err := b.ClaimExpired(ctx); err != nil {
		t.Fatalf("b could not claim a while a's silent transaction held its lease row: %v", err)
	}
	if err := a.RenewLease(ctx, epoch, time.Minute); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a renewing after b's claim: %v, want ErrFenced", err)
	}
}

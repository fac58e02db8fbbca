package postgres_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Issue 24: one execution row whose record does not decode (the column holds JSON, so here
// JSON of the wrong shape, as a bug or a hand-edited row leaves it) made every listing fail.
// Now it is skipped and handed to Undecodable, and the pages go on past it, in order, none
// repeated, none lost, whether it falls inside a page or on its last row; reading it alone is
// ErrUndecodable.
func TestListingSkipsAnUndecodableRecord(t *testing.T) {
	dsn := newDatabase(t)
	s := open(t, dsn, "node-a")
	var want []string
	for n := 1; n <= 7; n++ {
		commit(t, s, &store.Batch{Executions: []store.Execution{execution(n, api.ExecutionStateSucceeded, "node-a")}})
		want = append(want, executionID(n))
	}
	slices.Reverse(want) // newest first
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	damaged := []string{executionID(5), executionID(2)}
	for _, id := range damaged {
		if _, err := conn.Exec(context.Background(), `UPDATE executions SET record = '{"execution":[1]}' WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
	}
	want = slices.DeleteFunc(want, func(id string) bool { return slices.Contains(damaged, id) })

	for _, limit := range []int{1, 2, 3, 50} {
		var got, skipped []string
		q := store.ListQuery{Limit: limit, Undecodable: func(id string, err error) {
			if !errors.Is(err, store.ErrUndecodable) {
				t.Errorf("skipped %s with %v, want ErrUndecodable", id, err)
			}
			skipped = append(skipped, id)
		}}
		for pages := 0; ; pages++ {
			if pages > 20 {
				t.Fatalf("limit %d: the listing does not end", limit)
			}
			recs, next, err := s.ListExecutions(q)
			if err != nil {
				t.Fatalf("limit %d: %v", limit, err)
			}
			for _, r := range recs {
				got = append(got, r.Execution.ID)
			}
			if next == nil {
				break
			}
			q.After = next
		}
		if !slices.Equal(got, want) || !slices.Equal(skipped, damaged) {
			t.Fatalf("limit %d: listed %v skipped %v, want %v and %v", limit, got, skipped, want, damaged)
		}
	}
	if _, _, err := s.Execution(damaged[0]); !errors.Is(err, store.ErrUndecodable) {
		t.Fatalf("reading the damaged record: %v, want ErrUndecodable", err)
	}
}

// Every read of execution records answers a record that does not decode with an error that
// names it and matches ErrUndecodable (store.ErrUndecodable's contract), the cluster's walk of a
// node's unfinished executions as well as a single read.
func TestOwnedUnfinishedReportsAnUndecodableRecord(t *testing.T) {
	dsn := newDatabase(t)
	s := open(t, dsn, "node-a")
	commit(t, s, &store.Batch{Executions: []store.Execution{execution(1, api.ExecutionStateRunning, "node-a")}})
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `UPDATE executions SET record = '{"execution":[1]}' WHERE id = $1`, executionID(1)); err != nil {
		t.Fatal(err)
	}
	_, err = s.OwnedUnfinished(context.Background())
	if !errors.Is(err, store.ErrUndecodable) || !strings.Contains(err.Error(), executionID(1)) {
		t.Fatalf("OwnedUnfinished over a damaged record: %v, want ErrUndecodable naming %s", err, executionID(1))
	}
}

package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// What the invariants are checked against: the database's truth (SQL) and every node's answer
// (HTTP).

// dbExecution is one execution as the database holds it.
type dbExecution struct {
	id     string
	state  string
	events []dbEvent // in sequence order
}

type dbEvent struct {
	sequence int64
	typ      string
	message  string // run.failed's message
	at       time.Time
}

func (x dbExecution) lastSequence() int64 {
	if len(x.events) == 0 {
		return 0
	}
	return x.events[len(x.events)-1].sequence
}

func isTerminalState(state string) bool {
	switch api.ExecutionState(state) {
	case api.ExecutionStateSucceeded, api.ExecutionStateFailed, api.ExecutionStateCancelled:
		return true
	}
	return false
}

// readDatabase reads every execution and its events.
func readDatabase(ctx context.Context, dsn string) (map[string]*dbExecution, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	out := map[string]*dbExecution{}
	rows, err := conn.Query(ctx, `SELECT id, state FROM executions`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		x := &dbExecution{}
		if err := rows.Scan(&x.id, &x.state); err != nil {
			return nil, err
		}
		out[x.id] = x
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = conn.Query(ctx, `SELECT execution_id, sequence, data FROM events ORDER BY execution_id, sequence`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var seq int64
		var data []byte
		if err := rows.Scan(&id, &seq, &data); err != nil {
			return nil, err
		}
		var ev struct {
			Type string    `json:"type"`
			Time time.Time `json:"time"`
			Data struct {
				Message string `json:"message"`
			} `json:"data"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, fmt.Errorf("event %s #%d: %w", id, seq, err)
		}
		x := out[id]
		if x == nil { // events of an execution without a record: invariant 1 reports it
			x = &dbExecution{id: id}
			out[id] = x
		}
		x.events = append(x.events, dbEvent{sequence: seq, typ: ev.Type, message: ev.Data.Message, at: ev.Time})
	}
	return out, rows.Err()
}

// settle polls the database until every acknowledged execution is terminal or bound passes,
// and returns the last read.
func settle(ctx context.Context, dsn string, acks []ack, bound time.Duration) (map[string]*dbExecution, error) {
	deadline := time.Now().Add(bound)
	for {
		db, err := readDatabase(ctx, dsn)
		if err == nil {
			pending := 0
			for _, a := range acks {
				if x := db[a.id]; x == nil || !isTerminalState(x.state) {
					pending++
				}
			}
			if pending == 0 || time.Now().After(deadline) {
				return db, nil
			}
		} else if time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// view is one endpoint's answer for one execution.
type view struct {
	endpoint     string
	id           string
	state        string
	lastSequence int64
	err          string
}

// viewsOf asks every endpoint for every id (GET the execution and its event replay), with a
// few requests in flight at a time.
func viewsOf(ctx context.Context, endpoints []target, ids []string) []view {
	type job struct {
		tg target
		id string
	}
	jobs := make(chan job)
	var mu sync.Mutex
	var out []view
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for j := range jobs {
				v := viewOf(ctx, j.tg, j.id)
				mu.Lock()
				out = append(out, v)
				mu.Unlock()
			}
		})
	}
	for _, tg := range endpoints {
		for _, id := range ids {
			jobs <- job{tg, id}
		}
	}
	close(jobs)
	wg.Wait()
	return out
}

func viewOf(ctx context.Context, tg target, id string) view {
	v := view{endpoint: tg.name, id: id}
	var x api.Execution
	if err := getJSON(ctx, tg.base+"/v1/executions/"+id, &x); err != nil {
		v.err = err.Error()
		return v
	}
	var list api.EventList
	if err := getJSON(ctx, tg.base+"/v1/executions/"+id+"/events", &list); err != nil {
		v.err = err.Error()
		return v
	}
	v.state = string(x.State)
	if n := len(list.Events); n > 0 {
		v.lastSequence = list.Events[n-1].Sequence
	}
	return v
}

func getJSON(ctx context.Context, url string, into any) error {
	ctx, cancel := context.WithTimeout(ctx, requestGuard)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := loadClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d: %.200s", url, resp.StatusCode, raw)
	}
	return json.Unmarshal(raw, into)
}

// agreeing polls the endpoints until every view equals the database's or agreeWithin passes,
// asking again only for the views that still differ, and returns the last views (invariant 4
// checks them).
func agreeing(ctx context.Context, endpoints []target, db map[string]*dbExecution, ids []string) []view {
	deadline := time.Now().Add(agreeWithin)
	views := viewsOf(ctx, endpoints, ids)
	byName := map[string]target{}
	for _, tg := range endpoints {
		byName[tg.name] = tg
	}
	for time.Now().Before(deadline) {
		var differing []int
		for i, v := range views {
			if disagreement(v, db[v.id]) != "" {
				differing = append(differing, i)
			}
		}
		if len(differing) == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
		for _, i := range differing {
			views[i] = viewOf(ctx, byName[views[i].endpoint], views[i].id)
		}
	}
	return views
}

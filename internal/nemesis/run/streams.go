package run

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
	sse "github.com/tmaxmax/go-sse"
)

// follow is one logical stream: an execution's, a conversation's or a tenant's events, read
// over as many connections (subscriptions) as it takes. A connection that ends — cut by a
// fault, ended by a reload, or dropped on purpose after a drawn number of events — is resumed
// on a node drawn at random with the last cursor in Last-Event-ID, as a new subscription whose
// resumedFrom names the one before.
type follow struct {
	stream   string // "execution" | "conversation" | "tenant"
	scope    string // execution id, conversation id, or the tenant
	tenant   string
	path     string // with the filter's query, if any
	filtered bool
	client   string
	// done says the stream has nothing more to give (an execution stream after its terminal).
	done func(history.Event) bool
	// slow, when set, is how long the reader waits before each read (a slow reader).
	slow time.Duration
}

var subscriptions atomic.Int64

// run reads f until ctx ends or done says so, resuming on random nodes.
func (r *runner) follow(ctx context.Context, rng *rand.Rand, f follow) {
	cursor, previous := "", ""
	for ctx.Err() == nil {
		n := r.cluster.nodes[rng.IntN(len(r.cluster.nodes))]
		sub := fmt.Sprintf("s%d", subscriptions.Add(1))
		dropAfter := 1 + rng.IntN(60) // a deliberate disconnect after this many events
		if rng.IntN(3) == 0 {
			dropAfter = -1 // or none
		}
		next, finished := r.connect(ctx, n, f, sub, previous, cursor, dropAfter)
		if finished {
			return
		}
		if next != "" {
			cursor = next
		}
		previous = sub
		select {
		case <-ctx.Done():
		case <-time.After(between(rng, 50*time.Millisecond, 500*time.Millisecond)):
		}
	}
}

// connect opens one subscription and records its events; it returns the last cursor and
// whether the stream is finished.
func (r *runner) connect(ctx context.Context, n *node, f follow, sub, previous, cursor string, dropAfter int) (string, bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.base+f.path, nil)
	if err != nil {
		panic(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("X-Tenant", f.tenant)
	if cursor != "" {
		req.Header.Set("Last-Event-ID", cursor)
	}
	opened := r.j.Now()
	resp, err := r.streams.Do(req)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// 404: an execution this node does not know yet (or another tenant's): a later node may.
		// 503: the node is unsure of its lease. Either way: try again elsewhere.
		return "", resp.StatusCode == http.StatusBadRequest // a refused cursor will not improve
	}
	var body io.Reader = resp.Body
	if f.slow > 0 {
		body = &slowReader{r: resp.Body, wait: f.slow, ctx: ctx}
	}
	last, count := "", 0
	for ev, err := range sse.Read(body, &sse.ReadConfig{MaxEventSize: 4 << 20}) {
		if err != nil {
			break
		}
		if ev.Type == "" && ev.Data == "" {
			continue
		}
		line := history.Event{Stream: f.stream, Subscription: sub, ResumedFrom: previous, Scope: f.scope,
			Filtered: f.filtered, After: cursor, Opened: opened, Node: n.name, Cursor: ev.LastEventID, Type: ev.Type}
		line.T = r.j.Now()
		var head struct {
			ExecutionID string          `json:"executionId"`
			Sequence    int64           `json:"sequence"`
			Type        string          `json:"type"`
			Data        json.RawMessage `json:"data"`
		}
		if json.Unmarshal([]byte(ev.Data), &head) == nil {
			line.ExecutionID, line.Sequence = head.ExecutionID, head.Sequence
			if head.Type != "" {
				line.Type = head.Type
			}
		}
		if json.Valid([]byte(ev.Data)) {
			line.Data = json.RawMessage(ev.Data)
		}
		_ = r.j.Event(line)
		r.counts.add("event "+f.stream, 1)
		r.learn(f.tenant, line, head.Data)
		last = ev.LastEventID
		count++
		if f.done != nil && f.done(line) {
			return last, true
		}
		if count == dropAfter {
			return last, false
		}
	}
	return last, false
}

// learn feeds the world from an event: executions the clients did not start themselves, and
// actions to answer.
func (r *runner) learn(tenant string, line history.Event, data json.RawMessage) {
	if line.ExecutionID == "" {
		return
	}
	r.world.addExecution(line.ExecutionID, tenant)
	if line.Type == "action.required" {
		var a struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(data, &a) == nil && a.ID != "" {
			r.world.addAction(pendingAction{tenant: tenant, executionID: line.ExecutionID, actionID: a.ID})
		}
	}
}

func terminalEvent(t string) bool {
	return t == "run.completed" || t == "run.failed" || t == "run.cancelled"
}

// slowReader hands over at most 64 bytes per read after a wait: the server's buffers fill and
// its write deadline decides what happens to the stream.
type slowReader struct {
	r    io.Reader
	wait time.Duration
	ctx  context.Context
}

func (s *slowReader) Read(p []byte) (int, error) {
	select {
	case <-s.ctx.Done():
		return 0, s.ctx.Err()
	case <-time.After(s.wait):
	}
	return s.r.Read(p[:min(len(p), 64)])
}

package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// A bounded load generator: clients start mock executions at a bounded rate, for a bounded
// count, until stopped, over loopback; each request's outcome and latency is recorded, and so
// is every acknowledged start (202 with an id) with the node that acknowledged it.

// target is where a request goes: the balancer or one node.
type target struct {
	name string // "lb", or the node's name
	base string
}

// request is one start as the client saw it.
type request struct {
	target  string
	at      time.Time // sent
	latency time.Duration
	status  int    // 0: no answer (transport error)
	code    string // the Problem's code, if any
	err     string // the transport error, if any
	node    string // X-Harness-Node of the answer
}

func (r request) viaBalancer() bool { return r.target == "lb" }

// ack is an acknowledged start: the client holds an execution id and may rely on it.
type ack struct {
	id    string
	owner string // the node that answered 202: it runs the execution
	via   string
	at    time.Time
}

// recorder collects requests and acks from many goroutines.
type recorder struct {
	mu       sync.Mutex
	requests []request
	acks     []ack
}

func (r *recorder) add(req request, a *ack) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, req)
	if a != nil {
		r.acks = append(r.acks, *a)
	}
}

func (r *recorder) snapshot() ([]request, []ack) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.requests...), append([]ack(nil), r.acks...)
}

// workload is what each start asks the mock provider for: words of output, one every delay.
type workload struct {
	words int
	delay time.Duration
}

func (w workload) body(conversation string) []byte {
	raw, _ := json.Marshal(map[string]any{
		"conversationId": conversation, "providerId": "mock",
		"input":  strings.TrimSpace(strings.Repeat("w ", w.words)),
		"config": map[string]any{"delayMs": w.delay.Milliseconds()},
	})
	return raw
}

// loadClient is the HTTP client of the load: many connections per host, no client timeout (a
// guard per request instead, so a hang is recorded, not hidden).
var loadClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 0}}

// start sends one start to tg and records it.
func start(ctx context.Context, rec *recorder, tg target, body []byte) {
	ctx, cancel := context.WithTimeout(ctx, requestGuard)
	defer cancel()
	req := request{target: tg.name, at: time.Now()}
	var a *ack
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, tg.base+"/v1/executions", bytes.NewReader(body))
	if err != nil {
		panic(err) // a malformed URL is the test's bug
	}
	httpReq.Header.Set("Content-Type", "application/json")
	resp, err := loadClient.Do(httpReq)
	if err != nil {
		req.latency, req.err = time.Since(req.at), err.Error()
		rec.add(req, nil)
		return
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	req.latency, req.status, req.node = time.Since(req.at), resp.StatusCode, resp.Header.Get(nodeHeader)
	if err != nil {
		req.err = err.Error()
	}
	switch {
	case resp.StatusCode == http.StatusAccepted:
		var x api.Execution
		if json.Unmarshal(raw, &x) == nil && x.ID != "" {
			a = &ack{id: x.ID, owner: req.node, via: tg.name, at: req.at}
		}
	default:
		var p api.Problem
		_ = json.Unmarshal(raw, &p)
		req.code = p.Code
	}
	rec.add(req, a)
}

// load is a running generator.
type load struct {
	stop    context.CancelFunc
	done    sync.WaitGroup
	started atomic.Int64
}

// startLoad runs clients that send starts to targets in turn, at most rate per second in all
// and at most max in all, until stop.
func startLoad(rec *recorder, targets []target, conversations []string, w workload, clients int, rate float64, max int) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{stop: cancel}
	tokens := make(chan struct{})
	l.done.Add(1)
	go func() { // the pace: one token per 1/rate
		defer l.done.Done()
		defer close(tokens)
		tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer tick.Stop()
		for n := 0; n < max; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			select {
			case <-ctx.Done():
				return
			case tokens <- struct{}{}:
			}
		}
	}()
	var turn atomic.Int64
	for i := range clients {
		body := w.body(conversations[i%len(conversations)])
		l.done.Add(1)
		go func() {
			defer l.done.Done()
			for range tokens {
				// Not ctx: halting stops the sending, never a request in flight.
				start(context.Background(), rec, targets[int(turn.Add(1))%len(targets)], body)
				l.started.Add(1)
			}
		}()
	}
	return l
}

// halt stops sending and waits for the requests in flight.
func (l *load) halt() {
	l.stop()
	l.done.Wait()
}

// burst starts n executions at tg as fast as clients allow and returns how many were
// acknowledged (the takeover's preload).
func burst(rec *recorder, tg target, conversation string, w workload, clients, n int) error {
	body := w.body(conversation)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				start(context.Background(), rec, tg, body)
			}
		})
	}
	wg.Wait()
	_, acks := rec.snapshot()
	if len(acks) < n {
		return fmt.Errorf("%d of %d starts at %s acknowledged", len(acks), n, tg.name)
	}
	return nil
}

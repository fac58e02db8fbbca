package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// words returns an input of n words ("w1 w2 …"): the mock emits one delta per word, plus one
// for its "Echo: " prefix.
func words(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "w%d", i+1)
	}
	return b.String()
}

func (l *load) startReq(conv, input string, config api.JSONObject) api.StartExecutionRequest {
	return api.StartExecutionRequest{ConversationID: conv, ProviderID: l.cfg.provider, Input: input, Config: config}
}

// executionLoop is the end-to-end loop shared by the e2e and history phases: clients each
// create a conversation, then start mock executions and stream each to its terminal event,
// until total executions were started or the duration is over.
type executionLoop struct {
	started, completed atomic.Int64
	events             atomic.Int64
	lat                latencies
	startLat           latencies // POST → 202
	firstEvent         latencies // POST → first event received
	errs               *errCounter
}

func (l *load) runExecutions(ctx context.Context, name string, total int, d time.Duration, sample func(done int64)) (*executionLoop, time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	loop := &executionLoop{errs: newErrCounter()}
	prog := startProgress(name, "executions", &loop.completed, loop.errs)
	defer prog.end()
	start := time.Now()
	var wg sync.WaitGroup
	for range l.cfg.clients {
		wg.Go(func() {
			conv, err := l.client.CreateConversation(ctx, api.CreateConversationRequest{})
			if err != nil {
				loop.errs.add(err)
				return
			}
			var local []time.Duration
			defer func() { loop.lat.addAll(local) }()
			for ctx.Err() == nil && loop.started.Add(1) <= int64(total) {
				t0 := time.Now()
				if err := l.oneExecution(ctx, conv.ID, loop); err != nil {
					if ctx.Err() == nil {
						loop.errs.add(err)
					}
					continue
				}
				local = append(local, time.Since(t0))
				if n := loop.completed.Add(1); sample != nil {
					sample(n)
				}
			}
		})
	}
	wg.Wait()
	return loop, time.Since(start)
}

// oneExecution starts a mock execution ({"delayMs":0}, "hello runtime": 7 events) and follows
// it to its terminal event through the SDK. With -e2e-start stream (the default) that is
// sdk.Client.Run, which starts and streams in one request where the server can (harness-edge's
// extension) and takes the final snapshot from that answer's trailer (or reads it, from a server
// or proxy that sends no trailer), as a client would; with -e2e-start separate it
// is StartExecution (POST, 202) and then the Events iterator (GET, SSE), the three-request way
// of clients that do not know the extension.
func (l *load) oneExecution(ctx context.Context, conv string, loop *executionLoop) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req := l.startReq(conv, "hello runtime", api.JSONObject{"delayMs": 0})
	t0 := time.Now()
	if l.cfg.e2eStart == e2eStartStream {
		first := true
		res, err := l.client.Run(ctx, req, sdk.RunHandlers{OnEvent: func(api.RuntimeEvent) {
			if first {
				loop.firstEvent.add(time.Since(t0))
				first = false
			}
			loop.events.Add(1)
		}})
		if err != nil {
			return err
		}
		if !res.Succeeded() {
			return fmt.Errorf("execution %s ended %s", res.Execution.ID, res.Execution.State)
		}
		return nil
	}
	if l.cfg.e2eStart == e2eStartRaw {
		return l.rawExecution(ctx, conv, loop, t0)
	}
	exec, err := l.client.StartExecution(ctx, req)
	if err != nil {
		return err
	}
	loop.startLat.add(time.Since(t0))
	var last api.StandardEventType
	for ev, err := range l.client.Events(ctx, exec.ID, 0) {
		if err != nil {
			return err
		}
		if last == "" {
			loop.firstEvent.add(time.Since(t0))
		}
		loop.events.Add(1)
		last = ev.Type
	}
	if last != api.StandardEventTypeRunCompleted {
		return fmt.Errorf("execution %s ended with %q", exec.ID, last)
	}
	return nil
}

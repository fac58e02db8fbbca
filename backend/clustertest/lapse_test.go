package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/internal/testutil"
	"github.com/harness-edge/harness-edge/proxy"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// heldStream is a subscription followed on its own goroutine: what it delivered, and how it
// ended.
type heldStream struct {
	events []backend.Event
	err    error
	ended  chan struct{}
	n      atomic.Int64 // events so far, for waiting on the first one
}

func holdStream(t *testing.T, n *node, id string) *heldStream {
	t.Helper()
	s := &heldStream{ended: make(chan struct{})}
	// Longer than the test's waits for its end, so that a stream that does not end is reported
	// as such, not as a context that ran out.
	ctx, cancel := context.WithTimeout(context.Background(), 2*testTimeout)
	t.Cleanup(cancel)
	go func() {
		defer close(s.ended)
		for e, err := range backend.FollowExecution(ctx, n.rt, id, 0) {
			if err != nil {
				s.err = err
				return
			}
			s.events = append(s.events, e)
			s.n.Add(1)
		}
	}()
	deadline := time.Now().Add(testTimeout)
	for s.n.Load() == 0 { // open, and past its replay: following live
		if time.Now().After(deadline) {
			t.Fatalf("no event of %s on %s", id, n.name)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s
}

// A node that can no longer vouch for its lease (its renewals fail for a whole lease) ends every
// stream it serves, of its own executions and of other nodes' alike, with UNAVAILABLE and
// without a terminal event it cannot know, while it is still cut off: not when it comes back and
// learns it was fenced. New streams are refused the same way. A client resumes on the other node
// from its cursor and reads the rest of the log, the other node's run.failed included, without
// gap or duplicate. Once the node holds a lease again, it serves streams again.
func TestStreamsEndWhenTheNodeCannotVouchForItsLease(t *testing.T) {
	a, b, _, cut := cuttableCluster(t, nil)
	conv := newConversation(t, a)
	onA := start(t, a, api.StartExecutionRequest{ConversationID: conv, ProviderID: blockerID, Input: "a's"})
	onB := start(t, b, api.StartExecutionRequest{ConversationID: conv, ProviderID: blockerID, Input: "b's"})
	own, tail := holdStream(t, a, onA.ID), holdStream(t, a, onB.ID)

	cut.Store(true)
	for name, s := range map[string]*heldStream{"of its own execution": own, "of b's execution": tail} {
		select {
		case <-s.ended:
		case <-time.After(testTimeout):
			t.Fatalf("a's stream %s is still open %s after its renewals stopped (lease %s)", name, testTimeout, testLease)
		}
		wantCode(t, s.err, backend.CodeUnavailable)
		if errors.Is(s.err, backend.ErrClosed) {
			t.Fatalf("a's stream %s ended as if the runtime closed: %v", name, s.err)
		}
		for _, e := range s.events {
			if e.Terminal() {
				t.Fatalf("a's stream %s delivered a terminal event: %s", name, typesOf(s.events))
			}
		}
	}
	for _, id := range []string{onA.ID, onB.ID} {
		_, err := a.rt.OpenStream(context.Background(), backend.StreamRequest{ExecutionID: id, After: 0})
		wantCode(t, err, backend.CodeUnavailable)
	}

	// The client resumes on b from where a's stream ended: b claims a's execution and fails it.
	resumed := append(own.events, follow(t, b, onA.ID, own.events[len(own.events)-1].Sequence)...)
	checkComplete(t, "a's execution, resumed on b", resumed)
	if last := resumed[len(resumed)-1]; last.Type != api.StandardEventTypeRunFailed {
		t.Fatalf("a's execution ended on b with %s, want b's run.failed", last.Type)
	}

	cut.Store(false)
	waitReady(t, a)
	again := holdStream(t, a, onB.ID) // a serves streams again
	if _, err := b.rt.CancelExecution(ctxT(t), onB.ID, nil); err != nil {
		t.Fatal(err)
	}
	<-again.ended
	if again.err != nil {
		t.Fatalf("a's stream of b's execution after a holds a lease again: %v", again.err)
	}
	checkComplete(t, "b's execution, streamed on a after the outage", again.events)
	sameLog(t, "b's execution", follow(t, b, onB.ID, 0), again.events)
}

// Through the HTTP binding: when the node can no longer vouch for its lease, its SSE streams end
// cleanly — the body ends after a whole message, with no terminal event — so that an
// EventSource or the SDK reconnects with Last-Event-ID; a new stream is answered 503
// UNAVAILABLE with Retry-After, as a start is. The node logs the condition once, and no line per
// stream.
func TestSSEStreamsEndCleanlyWhenTheNodeCannotVouchForItsLease(t *testing.T) {
	var runtimeLog, proxyLog testutil.LockedBuffer
	a, b, _, cut := cuttableCluster(t, slog.New(slog.NewTextHandler(&runtimeLog, nil)))
	srv := httptest.NewServer(proxy.New(a.rt, proxy.Options{
		Heartbeat: 50 * time.Millisecond, // keep-alives while the stream waits: it must still end
		Logger:    slog.New(slog.NewTextHandler(&proxyLog, nil)),
	}))
	t.Cleanup(srv.Close)
	conv := newConversation(t, a)
	var streams []*sseStream
	for i, n := range []*node{a, b, a, b} {
		exec := start(t, n, api.StartExecutionRequest{ConversationID: conv, ProviderID: blockerID, Input: fmt.Sprint(i)})
		streams = append(streams, openSSE(t, srv.URL, exec.ID))
	}

	cut.Store(true)
	for _, s := range streams {
		select {
		case <-s.ended:
		case <-time.After(testTimeout):
			t.Fatalf("the stream of %s is still open %s after a's renewals stopped (lease %s)", s.id, testTimeout, testLease)
		}
		if s.err != nil || !bytes.HasSuffix(s.tail, []byte("\n\n")) {
			t.Fatalf("the stream of %s did not end cleanly after a whole message: %v, ends with %q", s.id, s.err, s.tail)
		}
		if s.terminal {
			t.Fatalf("the stream of %s delivered a terminal event a could not know", s.id)
		}
	}
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/executions/"+streams[0].id+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var problem api.Problem
	_ = json.NewDecoder(resp.Body).Decode(&problem)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || problem.Code != string(backend.CodeUnavailable) {
		t.Fatalf("a new stream while a cannot vouch: %d, Retry-After %q, %+v; want 503 UNAVAILABLE with Retry-After",
			resp.StatusCode, resp.Header.Get("Retry-After"), problem)
	}
	if n := strings.Count(runtimeLog.String(), "cannot vouch for its lease"); n != 1 {
		t.Fatalf("a logged the lapse %d times, want once:\n%s", n, runtimeLog.String())
	}
	if proxyLog.String() != "" {
		t.Fatalf("the HTTP binding logged the streams' end:\n%s", proxyLog.String())
	}
}

// sseStream is one SSE response read on its own goroutine to its end.
type sseStream struct {
	id       string
	terminal bool
	tail     []byte // the body's last bytes
	err      error  // what ended the body, if not its end
	ended    chan struct{}
}

// openSSE opens id's event stream at base and returns once its first event arrived.
func openSSE(t *testing.T, base, id string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*testTimeout)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/executions/"+id+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the events of %s: %d", id, resp.StatusCode)
	}
	s := &sseStream{id: id, ended: make(chan struct{})}
	first := make(chan struct{})
	go func() {
		defer close(s.ended)
		defer resp.Body.Close()
		r := &tailReader{r: resp.Body}
		opened := first
		for ev, err := range sse.Read(r, nil) {
			if err != nil {
				break
			}
			if opened != nil {
				close(opened)
				opened = nil
			}
			s.terminal = s.terminal || api.StandardEventType(ev.Type).Terminal()
		}
		s.tail = r.tail
		if r.err != io.EOF {
			s.err = r.err
		}
	}()
	select {
	case <-first:
	case <-s.ended:
		t.Fatalf("the stream of %s ended before its first event", id)
	}
	return s
}

// tailReader keeps the last two bytes read and the error that ended the body (go-sse's Read
// ends quietly on EOF, even inside a message).
type tailReader struct {
	r    io.Reader
	tail []byte
	err  error
}

func (t *tailReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.tail = append(t.tail, p[:n]...)
	t.tail = t.tail[max(0, len(t.tail)-2):]
	if err != nil && t.err == nil {
		t.err = err
	}
	return n, err
}

package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
)

// These tests pin down what acp-go-sdk's Connection does NOT do, which is why the boundary
// (boundary.go, inbound.go) exists beside it. Each one talks to a real Connection over pipes, as
// the agent would. If an SDK upgrade makes one of them fail, the SDK has learnt that behaviour:
// read docs/acp.md "What the boundary adds to the SDK" and delete the boundary's copy of it.

// sdkPeer is the agent's end of a Connection under test.
type sdkPeer struct {
	conn  *acpsdk.Connection
	in    *bufio.Reader  // what the Connection writes
	out   *io.PipeWriter // what the Connection reads
	logMu sync.Mutex
	logs  bytes.Buffer // everything the Connection logs
}

func newSDKPeer(t *testing.T, handler acpsdk.MethodHandler) *sdkPeer {
	t.Helper()
	fromConn, toPeer := io.Pipe()
	fromPeer, toConn := io.Pipe()
	p := &sdkPeer{in: bufio.NewReader(fromConn), out: toConn}
	p.conn = acpsdk.NewConnection(handler, toPeer, fromPeer)
	p.conn.SetLogger(slog.New(slog.NewTextHandler(lockedWriter{&p.logMu, &p.logs}, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() {
		_ = toConn.Close()
		_ = fromConn.Close()
	})
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (p *sdkPeer) send(t *testing.T, line string) {
	t.Helper()
	if _, err := p.out.Write([]byte(line + "\n")); err != nil {
		t.Fatalf("peer write: %v", err)
	}
}

// readRequestID reads the Connection's next line, which must be a request, and returns its id.
func (p *sdkPeer) readRequestID(t *testing.T) string {
	t.Helper()
	line, err := p.in.ReadBytes('\n')
	if err != nil {
		t.Fatalf("peer read: %v", err)
	}
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &msg) != nil || msg.ID == nil {
		t.Fatalf("expected a request, read %s", line)
	}
	return string(msg.ID)
}

func (p *sdkPeer) logged() string {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	return p.logs.String()
}

// call sends one request from our side and returns a channel with its outcome.
func (p *sdkPeer) call(method string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := acpsdk.SendRequest[json.RawMessage](p.conn, context.Background(), method, struct{}{})
		done <- err
	}()
	return done
}

// A response to no request of ours is dropped without a trace: no error reaches any caller, the
// connection stays up, and nothing is logged. The boundary needs our outstanding request ids to
// treat it as the violation the reference adapter makes of it (errUnmatchedResponse).
func TestSDKDropsUnmatchedResponsesSilently(t *testing.T) {
	p := newSDKPeer(t, nil)
	done := p.call("session/prompt")
	id := p.readRequestID(t)

	p.send(t, `{"jsonrpc":"2.0","id":4242,"result":{}}`)
	p.send(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`)
	if err := <-done; err != nil {
		t.Fatalf("our call failed after an unmatched response: %v", err)
	}
	select {
	case <-p.conn.Done():
		t.Fatal("the SDK closed the connection on an unmatched response")
	default:
	}
	if logs := p.logged(); logs != "" {
		t.Fatalf("the SDK now reports unmatched responses (%q): use that instead of the boundary's request table", logs)
	}
}

// The SDK hands a response to the waiting caller and reads on: a notification that follows the
// response on the wire is handled without waiting for the caller to act on the result. So the
// session id that session/new returns cannot be learnt by the caller in time to check the
// session/update right behind it; the boundary reads it off the response in wire order, which
// needs to know which of our requests the response answers.
func TestSDKHandlesNotificationsBehindAResponseBeforeTheCallerReturns(t *testing.T) {
	handled := make(chan struct{})
	p := newSDKPeer(t, func(_ context.Context, method string, _ json.RawMessage) (any, *acpsdk.RequestError) {
		if method == acpsdk.ClientMethodSessionUpdate {
			close(handled)
		}
		return nil, nil
	})
	callerMayReturn := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := acpsdk.SendRequest[json.RawMessage](p.conn, context.Background(), acpsdk.AgentMethodSessionNew, struct{}{})
		<-callerMayReturn // the caller has the result but has not stored the session id yet
		done <- err
	}()
	id := p.readRequestID(t)
	p.send(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{"sessionId":"s1"}}`)
	p.send(t, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`)
	<-handled // the update's handler ran while the caller still held its result unread
	close(callerMayReturn)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Inbound requests are handled on goroutines of their own, with no ordering against later
// responses: our call returns while a request the agent sent before its answer is still being
// handled. So a bad session/request_permission that precedes the prompt's answer would be
// noticed only after the turn had succeeded, unless the boundary checks it in wire order.
func TestSDKDoesNotOrderInboundRequestsBeforeLaterResponses(t *testing.T) {
	release := make(chan struct{})
	p := newSDKPeer(t, func(context.Context, string, json.RawMessage) (any, *acpsdk.RequestError) {
		<-release
		return nil, acpsdk.NewMethodNotFound("x")
	})
	defer close(release)
	done := p.call("session/prompt")
	id := p.readRequestID(t)
	p.send(t, `{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{}}`)
	p.send(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // a liveness bound, not a measurement
		t.Fatal("our call waited for the earlier inbound request: the SDK now orders requests, the boundary's wire-order permission check may go")
	}
}

// An inbound request's handler starts as soon as the request is read, while a notification the
// agent sent before it is still being handled: the SDK orders notifications among themselves and
// before our responses, not before the agent's requests. So a permission request could open its
// action before the updates in front of it are recorded, unless the handler waits for them
// (ordering.go's count, which the boundary keeps because the SDK's is unexported).
func TestSDKStartsARequestBeforeEarlierNotificationsAreHandled(t *testing.T) {
	release := make(chan struct{})
	requestStarted := make(chan struct{})
	p := newSDKPeer(t, func(_ context.Context, method string, _ json.RawMessage) (any, *acpsdk.RequestError) {
		switch method {
		case acpsdk.ClientMethodSessionUpdate:
			<-release
		case acpsdk.ClientMethodSessionRequestPermission:
			close(requestStarted)
		}
		return nil, nil
	})
	defer close(release)
	p.send(t, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`)
	p.send(t, `{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{}}`)
	select {
	case <-requestStarted: // while the update's handler is still held
	case <-time.After(time.Minute): // a liveness bound, not a measurement
		t.Fatal("the request waited for the earlier notification: the SDK now orders requests behind notifications, ordering.go may go")
	}
}

// What the reference adapter treats as violations the SDK tolerates: a JSON syntax error is
// logged and dropped with no reply (the reference answers -32700), and an envelope with another
// "jsonrpc" version is handled like a valid one. An unknown notification reaches the handler,
// which cannot tell it from a request (MethodHandler gets no id), and its "method not found" is
// only logged.
func TestSDKToleratesWhatTheReferenceRefuses(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	p := newSDKPeer(t, func(_ context.Context, method string, _ json.RawMessage) (any, *acpsdk.RequestError) {
		mu.Lock()
		seen = append(seen, method)
		mu.Unlock()
		return nil, acpsdk.NewMethodNotFound(method)
	})
	done := p.call("session/prompt")
	id := p.readRequestID(t)
	p.send(t, `{"jsonrpc":`)
	p.send(t, `{"jsonrpc":"1.0","method":"session/update","params":{}}`)
	p.send(t, `{"jsonrpc":"2.0","method":"session/whatever","params":{}}`)
	p.send(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`)
	if err := <-done; err != nil { // the notifications before the answer were handled (barrier)
		t.Fatalf("our call failed: %v", err)
	}
	mu.Lock()
	got := strings.Join(seen, ",")
	mu.Unlock()
	if got != "session/update,session/whatever" {
		t.Fatalf("handler saw %q", got)
	}
	// The only line the connection wrote was our request: no parse-error reply.
	p.send(t, `{"jsonrpc":"2.0","id":"r1","method":"fs/read_text_file","params":{}}`)
	line, err := p.in.ReadBytes('\n')
	if err != nil || !bytes.Contains(line, []byte(`"id":"r1"`)) {
		t.Fatalf("next line the SDK wrote = %s, %v; want the answer to r1 (no parse-error reply before it)", line, err)
	}
}

// The SDK answers an inbound request only when its handler returns: when the connection ends it
// answers nothing itself (its table of inbound requests is unexported), and a handler that
// returns afterwards still has its answer written. So teardown cannot ask the SDK which
// permission requests are unanswered nor have it answer them; the boundary keeps them, answers
// them itself, and drops the handlers' late answers.
func TestSDKAnswersInboundRequestsOnlyThroughTheirHandler(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	p := newSDKPeer(t, func(context.Context, string, json.RawMessage) (any, *acpsdk.RequestError) {
		close(entered)
		<-release
		return map[string]string{"from": "handler"}, nil
	})
	p.send(t, `{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{}}`)
	<-entered
	_ = p.out.Close() // the agent's side ends
	<-p.conn.Done()
	close(release)
	line, err := p.in.ReadBytes('\n')
	if err != nil || !bytes.Contains(line, []byte(`"id":"p1"`)) || !bytes.Contains(line, []byte(`"from":"handler"`)) {
		t.Fatalf("first line the SDK wrote after the connection ended = %s, %v; want the handler's late answer to p1", line, err)
	}
}

package acp

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// Teardown's promise to the agent (docs/acp.md): every permission request it asked is answered
// exactly once, and the answers are on the wire before teardown goes on to session/cancel and
// the close of stdin. These tests hold the boundary to it with the writes under their control.

// gatedWriter stands for the agent's stdin: each Write announces itself on entered and waits
// until the test releases it (or until open), then keeps the line.
type gatedWriter struct {
	entered chan gatedWrite
	open    bool // writes go through without being announced

	mu    sync.Mutex
	lines []string
}

type gatedWrite struct {
	line    string
	release chan struct{}
}

func newGatedWriter(open bool) *gatedWriter {
	return &gatedWriter{entered: make(chan gatedWrite, 16), open: open}
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	line := strings.TrimSuffix(string(p), "\n")
	if !g.open {
		w := gatedWrite{line: line, release: make(chan struct{})}
		g.entered <- w
		<-w.release
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lines = append(g.lines, line)
	return len(p), nil
}

func (g *gatedWriter) written() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.lines...)
}

// wireWithPermissions is a boundary in session s1 with the agent's permission requests ids
// pending, writing to stdin.
func wireWithPermissions(t *testing.T, stdin *gatedWriter, ids ...string) *boundary {
	t.Helper()
	b := newBoundary(&settings{maxMessageBytes: 1 << 20, maxPendingPermissions: 16}, stdin, func(error) {})
	b.sessionID = "s1"
	for _, id := range ids {
		forward, err := b.inspect([]byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"session/request_permission","params":{"sessionId":"s1",` + permissionBody + `}}`))
		if !forward || err != nil {
			t.Fatalf("permission %s: %v %v", id, forward, err)
		}
	}
	return b
}

func cancelledLine(id string) string {
	return `{"jsonrpc":"2.0","id":"` + id + `","result":{"outcome":{"outcome":"cancelled"}}}`
}

// The race TestTooManyPendingPermissionsFail met under load: the SDK's answer to the last pending
// request was counted as given before it was written, so teardown could close stdin between the
// two and the agent never got it. Teardown's answers must wait for an answer being written, and
// be written after it.
func TestTeardownWaitsForAnAnswerBeingWritten(t *testing.T) {
	stdin := newGatedWriter(false)
	b := wireWithPermissions(t, stdin, "p1", "p2")
	go func() { _, _ = b.Write([]byte(cancelledLine("p1") + "\n")) }()
	p1 := <-stdin.entered // the SDK's answer to p1 is on its way, not yet written

	done := make(chan struct{})
	go func() {
		b.cancelPendingPermissions()
		close(done)
	}()
	select {
	case <-done:
		t.Fatalf("teardown's answers were done while p1's answer was still being written (written: %v)", stdin.written())
	case w := <-stdin.entered:
		close(w.release)
		t.Fatalf("teardown wrote %s while p1's answer was still being written", w.line)
	case <-time.After(50 * time.Millisecond): // a chance to go wrong, not a measurement
	}
	close(p1.release)
	p2 := <-stdin.entered
	close(p2.release)
	<-done
	want := []string{cancelledLine("p1"), cancelledLine("p2")}
	if got := stdin.written(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("wire = %v\nwant %v", got, want)
	}
}

// An answer the handler has not produced by teardown (the runtime still recording the action)
// is given by the boundary, in arrival order; the handler's later answer is dropped, and a request
// arriving after teardown began is answered at once, not handed to the SDK.
func TestTeardownAnswersWhatIsStillPendingOnce(t *testing.T) {
	stdin := newGatedWriter(true)
	b := wireWithPermissions(t, stdin, "p2", "p1", "p3")
	_, _ = b.Write([]byte(`{"jsonrpc":"2.0","id":"p1","result":{"outcome":{"outcome":"selected","optionId":"o"}}}` + "\n"))

	b.cancelPendingPermissions()
	_, _ = b.Write([]byte(cancelledLine("p2") + "\n")) // the handlers, late
	_, _ = b.Write([]byte(cancelledLine("p3") + "\n"))
	forward, err := b.inspect([]byte(`{"jsonrpc":"2.0","id":"p4","method":"session/request_permission","params":{"sessionId":"s1",` + permissionBody + `}}`))
	if forward || err != nil {
		t.Fatalf("permission after teardown began: forward=%v err=%v, want answered here", forward, err)
	}
	_, _ = b.Write([]byte(`{"jsonrpc":"2.0","id":7,"result":{}}` + "\n")) // answers to other requests still go out

	want := []string{
		`{"jsonrpc":"2.0","id":"p1","result":{"outcome":{"outcome":"selected","optionId":"o"}}}`,
		cancelledLine("p2"),
		cancelledLine("p3"),
		cancelledLine("p4"),
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
	}
	if got := stdin.written(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("wire = %v\nwant %v", got, want)
	}
}

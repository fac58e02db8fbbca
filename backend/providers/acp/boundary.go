package acp

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"sync"
)

// boundary sits on both directions of the agent's stdio, between the process and the SDK
// connection. acp-go-sdk frames, correlates and decodes; the boundary adds only what it lacks
// (docs/acp.md "What the boundary adds to the SDK", pinned by sdk_gaps_test.go): a configurable
// line limit, the reference's violations (the SDK logs and drops them), checks that must happen
// in wire order because the SDK hands responses to their callers and requests to goroutines of
// their own, the count that keeps the agent's updates ahead of its later permission requests
// (ordering.go), and teardown's answers to pending permission requests. In wire order, a
// session/update that follows the session/new response is checked against the id that response
// carried, whatever the SDK's goroutines are doing.
//
// Outbound, it watches what the SDK writes for what the SDK does not tell: the id of the request
// the agent now owes us an answer to, and which of the agent's permission requests have been
// answered; at teardown it answers the rest itself (cancelPendingPermissions).
type boundary struct {
	maxMessageBytes       int
	maxPendingPermissions int
	violate               func(error) // records the first violation and fails the execution

	writeMu sync.Mutex // one writer at a time on the agent's stdin: the SDK and the boundary
	stdin   io.Writer

	mu sync.Mutex
	// awaiting is our one unanswered request. converse asks one thing at a time, so the agent
	// never owes us two answers; the SDK keeps the same id to deliver the result, but does not
	// report a response to anything else (it drops it), nor which request a response answered
	// before the caller wakes. A second request while one is awaited would make the first's
	// answer a violation: loud, not silent, if converse ever overlaps its calls.
	awaiting ourRequest
	// pendingPermissions are the agent's permission requests nobody has answered yet, by idKey.
	// An entry leaves under writeMu, just before its answer is written, so whoever holds writeMu
	// next sees the answer on the wire.
	pendingPermissions map[string]pendingPermission
	permissionSeq      uint64              // arrival order, so that teardown answers in wire order
	answeredHere       map[string]struct{} // answered cancelled by teardown: the SDK's answer is dropped
	closing            bool                // teardown began: permission requests are answered here
	sessionID          string              // learned from the session/new response

	// updates keeps the agent's session/updates ahead of the permission requests it sent after
	// them (ordering.go): the pump counts what it forwards, the session what it has recorded.
	updates updateOrder
}

// ourRequest is the id (as idKey) and method of a request we sent; the zero value is none.
type ourRequest struct {
	key, method string
}

// pendingPermission is one unanswered permission request: its id as the agent wrote it (the
// answer must echo it) and its place in arrival order.
type pendingPermission struct {
	id  json.RawMessage
	seq uint64
}

func newBoundary(s *settings, stdin io.Writer, violate func(error)) *boundary {
	return &boundary{
		maxMessageBytes:       s.maxMessageBytes,
		maxPendingPermissions: s.maxPendingPermissions,
		violate:               violate,
		stdin:                 stdin,
		pendingPermissions:    make(map[string]pendingPermission),
		answeredHere:          make(map[string]struct{}),
	}
}

// Write is the SDK's writer: one whole JSON-RPC line per call (acp-go-sdk's sendMessage).
func (b *boundary) Write(line []byte) (int, error) {
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	if !b.observeOutbound(line) {
		return len(line), nil // teardown already answered this request; one answer per request
	}
	return b.stdin.Write(line)
}

func (b *boundary) writeRaw(line []byte) {
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	_, _ = b.stdin.Write(line)
}

// observeOutbound records our request before it can be answered, and our answers to the agent's
// permission requests. It reports whether the line goes out: the SDK's answer to a
// permission request that teardown answered already does not. The caller holds writeMu.
func (b *boundary) observeOutbound(line []byte) (send bool) {
	var msg envelope
	if json.Unmarshal(line, &msg) != nil || msg.ID == nil {
		return true // a notification: nothing to await
	}
	key, ok := idKey(*msg.ID)
	if !ok {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if msg.Method != nil {
		var method string
		_ = json.Unmarshal(*msg.Method, &method)
		b.awaiting = ourRequest{key: key, method: method}
		return true
	}
	if _, done := b.answeredHere[key]; done {
		delete(b.answeredHere, key)
		return false
	}
	delete(b.pendingPermissions, key)
	return true
}

// answered takes our awaited request off the books if key names it.
func (b *boundary) answered(key string) (ourRequest, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.awaiting.key == "" || b.awaiting.key != key {
		return ourRequest{}, false
	}
	request := b.awaiting
	b.awaiting = ourRequest{}
	return request, true
}

// cancelPendingPermissions is teardown's first step (ACP: pending permission requests are answered
// cancelled before session/cancel). From now on the boundary answers every permission request
// itself: those still pending here, at once and in arrival order, and later ones as they arrive
// (inspectCall). It returns once the answers are written, and so does an answer the SDK was
// writing when it was called: both hold writeMu. The handlers' own answers come later, or never
// (the runtime may be slow to give up the action): they are dropped by Write.
//
// A stdin the agent does not read can block the write; the caller bounds its wait, and closing
// stdin ends the write.
func (b *boundary) cancelPendingPermissions() {
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	b.mu.Lock()
	b.closing = true
	pending := make([]pendingPermission, 0, len(b.pendingPermissions))
	for key, p := range b.pendingPermissions {
		pending = append(pending, p)
		b.answeredHere[key] = struct{}{}
	}
	clear(b.pendingPermissions)
	b.mu.Unlock()
	slices.SortFunc(pending, func(x, y pendingPermission) int { return cmp.Compare(x.seq, y.seq) })
	for _, p := range pending {
		_, _ = b.stdin.Write(cancelledAnswer(p.id))
	}
}

// reopen ends the closing of cancelPendingPermissions when the agent ended the cancelled turn
// and keeps serving the conversation: the next turn's permission requests are the caller's to
// answer again. Answers the handlers still give for the old turn's requests stay dropped.
func (b *boundary) reopen() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closing = false
}

// expectSession sets the session the agent's messages must name before we ask to continue it
// (session/resume, session/load): session/load replays its history before it answers.
func (b *boundary) expectSession(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sessionID = id
}

func (b *boundary) session() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sessionID
}

// pump copies checked inbound lines from the agent's stdout to the SDK until stdout ends, the
// SDK side is closed, or the agent breaks the protocol; it then closes the SDK side so that every
// pending call returns.
func (b *boundary) pump(stdout *os.File, toSDK *io.PipeWriter) {
	defer toSDK.Close()
	reader := bufio.NewReaderSize(stdout, 64*1024)
	for {
		line, err := readLine(reader, b.maxMessageBytes)
		if errors.Is(err, errMessageTooLarge) {
			b.violate(err)
			return
		}
		if len(line) > 0 {
			forward, violation := b.inspect(line)
			if violation != nil {
				b.violate(violation)
				return
			}
			if forward {
				if _, werr := toSDK.Write(append(line, '\n')); werr != nil {
					return
				}
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				b.violate(errStdoutUnreadable)
			}
			return
		}
	}
}

// readLine returns the next line without its line ending, refusing to buffer more than about
// limit bytes of it: an oversized message fails the execution without being read whole (the
// SDK's own limit is a fixed 10 MiB). The limit counts the message, not its "\n" or "\r\n".
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(line) > limit+1 { // one byte of slack for a "\r" whose "\n" is still unread
				return nil, errMessageTooLarge
			}
			continue
		}
		message := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(message) > limit {
			return nil, errMessageTooLarge
		}
		return message, err
	}
}

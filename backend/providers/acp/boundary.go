package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"
)

// boundary sits on both directions of the agent's stdio, between the process and the SDK
// connection. acp-go-sdk frames, correlates and decodes; the boundary adds only what it lacks
// (docs/acp.md "What the boundary adds to the SDK", pinned by sdk_gaps_test.go): a configurable
// line limit, the reference's violations (the SDK logs and drops them), and checks that must
// happen in wire order because the SDK hands responses to their callers and requests to
// goroutines of their own. In wire order, a session/update that follows the session/new response
// is checked against the id that response carried, whatever the SDK's goroutines are doing.
//
// Outbound, it watches what the SDK writes for the two things the SDK does not tell: the id of
// the request the agent now owes us an answer to, and which of the agent's permission requests
// have been answered.
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
	awaiting           ourRequest
	pendingPermissions map[string]struct{} // agent's permission request ids we have not answered
	permissionsIdle    chan struct{}       // closed while pendingPermissions is empty
	sessionID          string              // learned from the session/new response
}

// ourRequest is the id (as idKey) and method of a request we sent; the zero value is none.
type ourRequest struct {
	key, method string
}

func newBoundary(s *settings, stdin io.Writer, violate func(error)) *boundary {
	idle := make(chan struct{})
	close(idle)
	return &boundary{
		maxMessageBytes:       s.maxMessageBytes,
		maxPendingPermissions: s.maxPendingPermissions,
		violate:               violate,
		stdin:                 stdin,
		pendingPermissions:    make(map[string]struct{}),
		permissionsIdle:       idle,
	}
}

// Write is the SDK's writer: one whole JSON-RPC line per call (acp-go-sdk's sendMessage).
func (b *boundary) Write(line []byte) (int, error) {
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	b.observeOutbound(line)
	return b.stdin.Write(line)
}

func (b *boundary) writeRaw(line []byte) {
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	_, _ = b.stdin.Write(line)
}

// observeOutbound records our request before it can be answered, and our answers to the agent's
// permission requests.
func (b *boundary) observeOutbound(line []byte) {
	var msg envelope
	if json.Unmarshal(line, &msg) != nil || msg.ID == nil {
		return // a notification: nothing to await
	}
	key, ok := idKey(*msg.ID)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if msg.Method != nil {
		var method string
		_ = json.Unmarshal(*msg.Method, &method)
		b.awaiting = ourRequest{key: key, method: method}
		return
	}
	b.answeredPermissionLocked(key)
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

func (b *boundary) answeredPermissionLocked(key string) {
	if _, ok := b.pendingPermissions[key]; !ok {
		return
	}
	delete(b.pendingPermissions, key)
	if len(b.pendingPermissions) == 0 {
		close(b.permissionsIdle)
	}
}

// permissionsAnswered is closed once every permission request the agent made has been answered.
func (b *boundary) permissionsAnswered() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.permissionsIdle
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

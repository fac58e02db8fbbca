package acp

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"
)

// Boundary violations: the agent broke the protocol. They fail the execution; the text stays
// inside the adapter (tests read it), the portable error is always errAgentRequestFailed.
var (
	errMessageTooLarge      = errors.New("inbound message exceeds max_message_bytes")
	errBadEnvelope          = errors.New("inbound message is not a JSON-RPC 2.0 envelope")
	errUnmatchedResponse    = errors.New("response does not match an outstanding request")
	errUnknownNotification  = errors.New("unknown notification")
	errForeignSession       = errors.New("message for a session that is not this execution's")
	errTooManyPermissions   = errors.New("more permission requests outstanding than max_pending_permissions")
	errInvalidParams        = errors.New("invalid params")
	errStdoutUnreadable     = errors.New("agent stdout failed")
	parseErrorReply         = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}` + "\n")
	cancelledPermissionJSON = json.RawMessage(`{"outcome":{"outcome":"cancelled"}}`)
)

// boundary sits on both directions of the agent's stdio, between the process and the SDK
// connection. The SDK (acp-go-sdk) frames, correlates and decodes, but it tolerates what the
// reference adapter treats as violations: it logs and drops malformed envelopes, unmatched
// responses and unknown notifications, and it reads lines of up to 10 MiB. The boundary checks
// every inbound line first, in wire order — which also makes the session-id check exact: a
// session/update that follows the session/new response on the wire is checked against the id
// that response carried, whatever the SDK's goroutines are doing.
//
// Outbound, it watches what the SDK writes to learn which request ids are outstanding and which
// inbound permission requests have been answered; at teardown it answers the rest itself
// (cancelPendingPermissions).
type boundary struct {
	maxMessageBytes       int
	maxPendingPermissions int
	violate               func(error) // records the first violation and fails the execution

	writeMu sync.Mutex // one writer at a time on the agent's stdin: the SDK and the boundary
	stdin   io.Writer

	mu          sync.Mutex
	outstanding map[string]string // our request id → method, until the agent answers
	// pendingPermissions are the agent's permission requests nobody has answered yet, by idKey.
	// An entry leaves under writeMu, just before its answer is written, so whoever holds writeMu
	// next sees the answer on the wire.
	pendingPermissions map[string]pendingPermission
	permissionSeq      uint64              // arrival order, so that teardown answers in wire order
	answeredHere       map[string]struct{} // answered cancelled by teardown: the SDK's answer is dropped
	closing            bool                // teardown began: permission requests are answered here
	sessionID          string              // learned from the session/new response
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
		outstanding:           make(map[string]string),
		pendingPermissions:    make(map[string]pendingPermission),
		answeredHere:          make(map[string]struct{}),
	}
}

// envelope is a JSON-RPC message with every member kept raw, so that presence can be told apart
// from null.
type envelope struct {
	JSONRPC *json.RawMessage `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id"`
	Method  *json.RawMessage `json:"method"`
	Params  *json.RawMessage `json:"params"`
	Result  *json.RawMessage `json:"result"`
	Error   *json.RawMessage `json:"error"`
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

// observeOutbound records our requests before they can be answered, and our answers to the
// agent's permission requests. It reports whether the line goes out: the SDK's answer to a
// permission request that teardown answered already does not. The caller holds writeMu.
func (b *boundary) observeOutbound(line []byte) (send bool) {
	var msg envelope
	if json.Unmarshal(line, &msg) != nil || msg.ID == nil {
		return true
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
		b.outstanding[key] = method
		return true
	}
	if _, done := b.answeredHere[key]; done {
		delete(b.answeredHere, key)
		return false
	}
	delete(b.pendingPermissions, key)
	return true
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
// limit bytes of it: an oversized message fails the execution without being read whole. The limit
// counts the message, not its "\n" or "\r\n".
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

// inspect decides what happens to one inbound line: forwarded to the SDK, answered here, or a
// violation.
func (b *boundary) inspect(line []byte) (forward bool, violation error) {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return false, nil
	}
	if !json.Valid(trimmed) {
		// The reference tolerates JSON syntax errors with a parse-error reply (JSON-RPC §5.1).
		b.writeRaw(parseErrorReply)
		return false, nil
	}
	var msg envelope
	if err := json.Unmarshal(trimmed, &msg); err != nil {
		return false, errBadEnvelope // valid JSON, but not an object
	}
	if msg.JSONRPC == nil || string(*msg.JSONRPC) != `"2.0"` {
		return false, errBadEnvelope
	}
	if msg.Method != nil {
		return b.inspectCall(&msg)
	}
	return b.inspectResponse(&msg)
}

func (b *boundary) inspectCall(msg *envelope) (bool, error) {
	var method string
	if json.Unmarshal(*msg.Method, &method) != nil || method == "" || msg.Result != nil || msg.Error != nil {
		return false, errBadEnvelope
	}
	if msg.Params != nil && !isJSONObjectOrArray(*msg.Params) {
		return false, errBadEnvelope
	}
	if msg.ID == nil {
		return b.inspectNotification(method, msg.Params)
	}
	key, ok := idKey(*msg.ID)
	if !ok {
		return false, errBadEnvelope
	}
	if method != acpsdk.ClientMethodSessionRequestPermission {
		return true, nil // the SDK answers anything we do not handle with "method not found"
	}
	if err := b.checkSession(msg.Params); err != nil {
		return false, err
	}
	if err := validatePermissionParams(*msg.Params); err != nil {
		return false, err
	}
	b.mu.Lock()
	closing := b.closing
	overflow := !closing && len(b.pendingPermissions) >= b.maxPendingPermissions
	if !closing && !overflow {
		b.permissionSeq++
		b.pendingPermissions[key] = pendingPermission{id: *msg.ID, seq: b.permissionSeq}
	}
	b.mu.Unlock()
	switch {
	case closing:
		b.writeRaw(cancelledAnswer(*msg.ID)) // teardown began: nobody will ask the caller
		return false, nil
	case overflow:
		b.writeRaw(cancelledAnswer(*msg.ID))
		return false, errTooManyPermissions
	}
	return true, nil
}

func (b *boundary) inspectNotification(method string, params *json.RawMessage) (bool, error) {
	switch {
	case method == acpsdk.ClientMethodSessionUpdate:
		if err := b.checkSession(params); err != nil {
			return false, err
		}
		if err := validateUpdateParams(*params); err != nil {
			return false, err
		}
		return true, nil
	case method == "$/cancel_request":
		var p struct {
			RequestID *json.RawMessage `json:"requestId"`
		}
		if params == nil || json.Unmarshal(*params, &p) != nil || p.RequestID == nil {
			return false, errInvalidParams
		}
		if _, ok := idKey(*p.RequestID); !ok {
			return false, errInvalidParams
		}
		return true, nil
	case len(method) > 1 && method[0] == '_':
		// ACP extension notifications: receivers that do not know them must ignore them.
		return false, nil
	default:
		return false, fmt.Errorf("%w: %s", errUnknownNotification, method)
	}
}

func (b *boundary) inspectResponse(msg *envelope) (bool, error) {
	if msg.ID == nil || (msg.Result == nil) == (msg.Error == nil) {
		return false, errBadEnvelope
	}
	if msg.Error != nil {
		var e struct {
			Code    *int    `json:"code"`
			Message *string `json:"message"`
		}
		if json.Unmarshal(*msg.Error, &e) != nil || e.Code == nil || e.Message == nil {
			return false, errBadEnvelope
		}
	}
	key, ok := idKey(*msg.ID)
	if !ok {
		return false, errUnmatchedResponse
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	method, outstanding := b.outstanding[key]
	if !outstanding {
		return false, errUnmatchedResponse
	}
	delete(b.outstanding, key)
	if method == acpsdk.AgentMethodSessionNew && msg.Result != nil {
		var created struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(*msg.Result, &created)
		b.sessionID = created.SessionID
	}
	return true, nil
}

// checkSession requires params.sessionId to name this execution's session. Before the
// session/new response there is no session, so nothing can name it.
func (b *boundary) checkSession(params *json.RawMessage) error {
	var p struct {
		SessionID *string `json:"sessionId"`
	}
	if params == nil || json.Unmarshal(*params, &p) != nil || p.SessionID == nil {
		return errInvalidParams
	}
	ours := b.session()
	if ours == "" || *p.SessionID != ours {
		return errForeignSession
	}
	return nil
}

// validateUpdateParams and validatePermissionParams check params against the SDK's ACP types
// here, in wire order. The handlers decode them again for their values, but a request is handled
// on its own goroutine: only a check at the boundary is sure to fail the execution before an
// answer to session/prompt that follows the bad request on the wire.
//
// The SDK decodes an update without a known "sessionUpdate" kind leniently, so the kind's
// presence is checked here; an unknown kind is let through (it still becomes a provider.event)
// so that agents on newer ACP revisions keep working.
func validateUpdateParams(params json.RawMessage) error {
	var update acpsdk.SessionNotification
	if json.Unmarshal(params, &update) != nil || update.Update.Validate() != nil {
		return errInvalidParams
	}
	var kind struct {
		Update struct {
			SessionUpdate *string `json:"sessionUpdate"`
		} `json:"update"`
	}
	if json.Unmarshal(params, &kind) != nil || kind.Update.SessionUpdate == nil || *kind.Update.SessionUpdate == "" {
		return errInvalidParams
	}
	return nil
}

func validatePermissionParams(params json.RawMessage) error {
	var request acpsdk.RequestPermissionRequest
	if json.Unmarshal(params, &request) != nil || request.Validate() != nil || request.ToolCall.Validate() != nil {
		return errInvalidParams
	}
	return nil
}

// cancelledAnswer is the line answering permission request id with the cancelled outcome. The id
// is one idKey accepted, so it marshals.
func cancelledAnswer(id json.RawMessage) []byte {
	reply, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
	}{"2.0", id, cancelledPermissionJSON})
	return append(reply, '\n')
}

// idKey canonicalises a JSON-RPC id (a string or a number) so that our id 7 matches the agent's
// echo of 7 whatever its spacing; null, booleans and structures are not ids.
func idKey(raw json.RawMessage) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return "", false
	}
	switch id := v.(type) {
	case string:
		return "s:" + id, true
	case json.Number:
		return "n:" + id.String(), true
	default:
		return "", false
	}
}

func isJSONObjectOrArray(raw json.RawMessage) bool {
	trimmed := bytes.TrimSpace(raw)
	return len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')
}

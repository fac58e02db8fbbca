package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

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

// envelope is a JSON-RPC message with every member kept raw, so that presence can be told apart
// from null (the SDK's own envelope type cannot, and is unexported).
type envelope struct {
	JSONRPC *json.RawMessage `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id"`
	Method  *json.RawMessage `json:"method"`
	Params  *json.RawMessage `json:"params"`
	Result  *json.RawMessage `json:"result"`
	Error   *json.RawMessage `json:"error"`
}

// inspect decides what happens to one inbound line: forwarded to the SDK, answered here, or a
// violation.
func (b *boundary) inspect(line []byte) (forward bool, violation error) {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return false, nil
	}
	if !json.Valid(trimmed) {
		// The reference tolerates JSON syntax errors with a parse-error reply (JSON-RPC §5.1);
		// the SDK logs and drops them without one.
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
	if method == acpsdk.ClientMethodSessionUpdate {
		// A notification sent as a request. The handler cannot tell the two apart (it gets no
		// id): it would record it as an update, out of updateOrder's count of the notifications,
		// and the SDK would answer null. Refused like any request a client does not offer, as
		// the TypeScript SDK's client does.
		b.writeRaw(errorAnswer(*msg.ID, acpsdk.NewMethodNotFound(method)))
		return false, nil
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

// inspectNotification refuses unknown notifications here: the SDK's MethodHandler gets no id, so
// the handler cannot tell an unknown notification (a violation) from an unknown request (answered
// "method not found").
func (b *boundary) inspectNotification(method string, params *json.RawMessage) (bool, error) {
	switch {
	case method == acpsdk.ClientMethodSessionUpdate:
		if err := b.checkSession(params); err != nil {
			return false, err
		}
		if err := validateUpdateParams(*params); err != nil {
			return false, err
		}
		b.updates.forward()
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

// inspectResponse lets through only the answer to the request we await, and reads the session id
// off the session/new answer here, in wire order, before any line behind it is inspected.
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
	request, ok := b.answered(key)
	if !ok {
		return false, errUnmatchedResponse
	}
	if request.method == acpsdk.AgentMethodSessionNew && msg.Result != nil {
		var created struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(*msg.Result, &created)
		b.mu.Lock()
		b.sessionID = created.SessionID
		b.mu.Unlock()
	}
	return true, nil
}

// checkSession requires params.sessionId to name the process's native session. Before the
// session/new response (or our request to resume or load a session) there is none, so nothing
// can name it.
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

// errorAnswer is the line answering request id with a JSON-RPC error.
func errorAnswer(id json.RawMessage, rerr *acpsdk.RequestError) []byte {
	reply, _ := json.Marshal(struct {
		JSONRPC string               `json:"jsonrpc"`
		ID      json.RawMessage      `json:"id"`
		Error   *acpsdk.RequestError `json:"error"`
	}{"2.0", id, rerr})
	return append(reply, '\n')
}

// idKey canonicalises a JSON-RPC id (a string or a number) so that our id 7 matches the agent's
// echo of 7 whatever its spacing; null, booleans and structures are not ids. (The SDK's
// canonicalJSONRPCIDKey is unexported.)
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

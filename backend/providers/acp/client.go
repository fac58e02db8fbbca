package acp

import (
	"context"
	"encoding/json"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.opentelemetry.io/otel/trace"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// handle is the client side of ACP: the SDK calls it for every request and notification the agent
// sends (after the boundary let it through). We implement the raw acpsdk.MethodHandler rather than
// acpsdk.Client so that provider.event carries the agent's params as sent, not a re-encoding of
// the SDK's structs, and so that everything we do not offer answers "method not found".
//
// The SDK calls it for notifications in wire order on one goroutine, and for each request on a
// goroutine of its own; a permission request first waits for the updates the agent sent before
// it (ordering.go), so that the runtime records them before the request's action.required.
// What the agent sends belongs to the turn in progress; between turns there is nobody to tell
// (updates are dropped, permission requests answered cancelled).
func (s *session) handle(ctx context.Context, method string, params json.RawMessage) (any, *acpsdk.RequestError) {
	switch method {
	case acpsdk.ClientMethodSessionUpdate:
		defer s.wire.updates.record() // only notifications get here (inbound.go)
		return nil, s.onSessionUpdate(params)
	case acpsdk.ClientMethodSessionRequestPermission:
		t := s.turn()
		if t == nil {
			return acpsdk.RequestPermissionResponse{Outcome: cancelledOutcome()}, nil
		}
		// ctx ends when the agent withdraws the request ($/cancel_request) or the connection
		// closes: then nobody is asked, and the answer is cancelled (if teardown has not given
		// it already: boundary.go).
		if !s.wire.updates.awaitEarlier(ctx, func() { s.observe.awaitingUpdates(t.executionID()) }) {
			return acpsdk.RequestPermissionResponse{Outcome: cancelledOutcome()}, nil
		}
		span := s.rpcSpan(method, trace.SpanKindServer)
		answer, rerr := s.onPermissionRequest(t, params)
		endRPCSpan(span, nil)
		return answer, rerr
	default:
		// fs/*, terminal/* and everything else: we declared no client capabilities, so we refuse
		// with JSON-RPC -32601 as the reference does.
		return nil, acpsdk.NewMethodNotFound(method)
	}
}

// onSessionUpdate turns every session/update into a provider.event, and agent text chunks also
// into output.text.delta plus the final output. The session id was checked by the boundary.
// History that session/load replays is counted, not emitted: it is not this execution's output.
func (s *session) onSessionUpdate(params json.RawMessage) *acpsdk.RequestError {
	var update acpsdk.SessionNotification
	if json.Unmarshal(params, &update) != nil || update.Update.Validate() != nil {
		s.breakDown(errInvalidParams)
		return acpsdk.NewInvalidParams(nil)
	}
	var native api.JSONObject
	if json.Unmarshal(params, &native) != nil {
		s.breakDown(errInvalidParams)
		return acpsdk.NewInvalidParams(nil)
	}
	if s.countReplayed() {
		return nil
	}
	t := s.turn()
	if t == nil {
		return nil // between turns: nobody's output
	}
	text, isText := agentText(params, update.Update)
	s.observe.updating(t.executionID())
	if err := t.recordUpdate(native, text, isText); err != nil {
		t.fail(err)
		return acpsdk.NewInternalError(nil)
	}
	if u := update.Update.UsageUpdate; u != nil {
		t.usage.updated(u)
		if err := t.reportUsage(); err != nil {
			t.fail(err)
			return acpsdk.NewInternalError(nil)
		}
	}
	return nil
}

// recordUpdate emits one update's provider.event (and its text delta) unless Run has returned.
func (t *turn) recordUpdate(native api.JSONObject, text string, isText bool) error {
	t.emitMu.RLock()
	defer t.emitMu.RUnlock()
	if t.sealed {
		return nil // the execution has its outcome; late updates have nowhere to go
	}
	err := t.run.Emit(api.StandardEventTypeProviderEvent, api.JSONObject{
		"provider": providerEventSource,
		"method":   acpsdk.ClientMethodSessionUpdate,
		"params":   native,
	})
	if err == nil && isText {
		t.appendOutput(text)
		err = t.run.EmitText(text)
	}
	return err
}

// agentText reports the text of an agent_message_chunk with text content (empty text included).
// The discriminator is read from the wire because the SDK's union decoding also accepts other
// kinds that merely carry a "content" member.
func agentText(params json.RawMessage, update acpsdk.SessionUpdate) (string, bool) {
	var kind struct {
		Update struct {
			SessionUpdate string `json:"sessionUpdate"`
		} `json:"update"`
	}
	if json.Unmarshal(params, &kind) != nil || kind.Update.SessionUpdate != "agent_message_chunk" {
		return "", false
	}
	chunk := update.AgentMessageChunk
	if chunk == nil || chunk.Content.Text == nil {
		return "", false
	}
	return chunk.Content.Text.Text, true
}

// onPermissionRequest asks the caller through an approval action and maps the answer onto one of
// the agent's options. Anything short of a valid choice answers "cancelled".
func (s *session) onPermissionRequest(t *turn, params json.RawMessage) (any, *acpsdk.RequestError) {
	var request acpsdk.RequestPermissionRequest
	if json.Unmarshal(params, &request) != nil || request.Validate() != nil || request.ToolCall.Validate() != nil {
		s.breakDown(errInvalidParams)
		return nil, acpsdk.NewInvalidParams(nil)
	}
	return t.askPermission(request), nil
}

// askPermission serializes the agent's permission requests: the runtime allows one pending action
// per execution, while an agent may ask several questions at once.
func (t *turn) askPermission(request acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionResponse {
	cancelled := acpsdk.RequestPermissionResponse{Outcome: cancelledOutcome()}
	t.emitMu.RLock()
	defer t.emitMu.RUnlock()
	if t.sealed {
		return cancelled
	}
	select {
	case t.actionSlot <- struct{}{}:
		defer func() { <-t.actionSlot }()
	case <-t.stopping.Done():
		return cancelled
	}
	if t.stopping.Err() != nil {
		return cancelled
	}
	response, err := t.run.RequestAction(t.stopping, permissionAction(request))
	if err != nil {
		return cancelled // aborted, failed, or the execution is stopping
	}
	return permissionResponse(request.Options, response)
}

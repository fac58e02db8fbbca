package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Ids that no server has: the suite's probes of unknown things.
const (
	missingConversation = "conv_conformance_missing"
	missingExecution    = "exec_conformance_missing"
	missingAction       = "action_conformance_missing"
	missingProvider     = "conformance-missing-provider"
	artifactName        = "conformance.txt"
)

// runHTTPCases runs the reference's HTTP-level acceptance cases (§14.1), named "http/…".
func (s *suite) runHTTPCases(ctx context.Context, m api.ProviderManifest, found bool) {
	isMock := s.opts.ProviderID == DefaultProviderID
	c := &cases{s: s, ctx: ctx, manifest: m}

	c.check("health", c.health)
	c.check("runtime", c.runtime)
	c.check("invalid-execution-request", c.invalidExecutionRequest)
	c.check("invalid-cancellation-request", c.invalidCancellationRequest)
	c.check("invalid-cursors", c.invalidCursors)
	c.check("malformed-json", c.malformedJSON)
	c.check("required-body", c.requiredBody)
	c.check("not-found", c.notFound)
	if !found {
		c.skipAll("provider "+s.opts.ProviderID+" is not listed by GET /v1/runtime/capabilities",
			"provider-not-found", "capability-unsupported", "idempotency-reuse", "idempotency-conflict",
			"sse-replay", "sse-framing", "json-replay-terminal", "json-replay-beyond-end",
			"cancel-terminal-noop", "invalid-action-response", "action-not-found", "approval-with-artifact",
			"duplicate-action-response", "truncated-stream")
		return
	}
	c.check("provider-not-found", c.providerNotFound)
	c.check("capability-unsupported", c.capabilityUnsupported)
	c.check("idempotency-reuse", c.idempotencyReuse)
	c.check("idempotency-conflict", c.idempotencyConflict)
	c.check("sse-replay", c.sseReplay)
	c.check("sse-framing", c.sseFraming)
	c.check("json-replay-terminal", c.jsonReplayTerminal)
	c.check("json-replay-beyond-end", c.jsonReplayBeyondEnd)
	c.check("cancel-terminal-noop", c.cancelTerminalNoop)

	if !isMock {
		reason := "needs an execution waiting for approval, which only the mock can be asked for (config requireApproval)"
		c.skipAll(reason, "invalid-action-response", "action-not-found", "approval-with-artifact",
			"duplicate-action-response", "truncated-stream")
		return
	}
	c.check("invalid-action-response", c.invalidActionResponse)
	c.check("action-not-found", c.actionNotFound)
	c.check("approval-with-artifact", c.approvalWithArtifact)
	c.check("duplicate-action-response", c.duplicateActionResponse)
	c.check("truncated-stream", c.truncatedStream)
}

// cases holds what the HTTP cases share: a finished execution to replay, an approval
// execution walked through its steps, the idempotent start.
type cases struct {
	s        *suite
	ctx      context.Context
	manifest api.ProviderManifest

	finished    *finishedExecution
	finishedErr error

	idemRequest map[string]any // the start request http/idempotency-reuse sent

	approval *approvalExecution
}

type finishedExecution struct {
	id     string
	state  api.ExecutionState
	events []api.RuntimeEvent
}

type approvalExecution struct {
	id, actionID string
	err          error // why the approval execution could not be set up
	approved     bool
}

// check runs one case bounded by the probe timeout and records its verdict.
func (c *cases) check(name string, fn func(ctx context.Context) error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.s.opts.Timeout)
	defer cancel()
	err := fn(ctx)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("timed out: %w", err)
	}
	chk := Check{Name: "http/" + name, Passed: err == nil}
	if err != nil {
		chk.Detail = err.Error()
	}
	c.s.add(chk)
}

func (c *cases) skipAll(reason string, names ...string) {
	for _, n := range names {
		c.s.add(Check{Name: "http/" + n, Skipped: true, Detail: reason})
	}
}

func (c *cases) health(ctx context.Context) error {
	r, err := c.s.raw.do(ctx, http.MethodGet, "/healthz", nil, nil)
	if err != nil {
		return err
	}
	var body struct{ Status string }
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &body) != nil || body.Status != "ok" {
		return fmt.Errorf("GET /healthz: status %d, body %s; want 200 {\"status\":\"ok\"}", r.Status, clip(r.Body))
	}
	return nil
}

func (c *cases) runtime(ctx context.Context) error {
	r, err := c.s.raw.do(ctx, http.MethodGet, "/v1/runtime", nil, nil)
	if err != nil {
		return err
	}
	var d api.RuntimeDescription
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &d) != nil {
		return fmt.Errorf("GET /v1/runtime: status %d, body %s", r.Status, clip(r.Body))
	}
	if d.Name == "" || d.Version == "" {
		return fmt.Errorf("GET /v1/runtime: name %q, version %q; both must be non-empty", d.Name, d.Version)
	}
	if d.ProtocolVersion != api.RuntimeDescriptionProtocolVersionN20260902 {
		return fmt.Errorf("GET /v1/runtime: protocolVersion %q, want %q", d.ProtocolVersion, api.RuntimeDescriptionProtocolVersionN20260902)
	}
	manifests, err := c.s.sdk.ListCapabilities(ctx)
	if err != nil {
		return err
	}
	if jsonString(manifests) != jsonString(d.Providers) {
		return errors.New("GET /v1/runtime/capabilities lists other providers than GET /v1/runtime")
	}
	return nil
}

func (c *cases) invalidExecutionRequest(ctx context.Context) error {
	r, err := c.s.raw.postJSON(ctx, "/v1/executions", map[string]any{"providerId": c.s.opts.ProviderID})
	if err != nil {
		return err
	}
	return expectProblem(r, http.StatusBadRequest, problem("VALIDATION_ERROR", "Invalid execution request"))
}

func (c *cases) invalidCancellationRequest(ctx context.Context) error {
	r, err := c.s.raw.postJSON(ctx, "/v1/executions/missing:cancel", map[string]any{"reason": 42})
	if err != nil {
		return err
	}
	return expectProblem(r, http.StatusBadRequest, problem("VALIDATION_ERROR", "Invalid cancellation request"))
}

func (c *cases) invalidCursors(ctx context.Context) error {
	for _, cursor := range []string{"-1", "1.5", "not-a-number", "9007199254740992"} {
		r, err := c.s.raw.do(ctx, http.MethodGet, "/v1/executions/missing/events?after="+cursor, nil,
			http.Header{"Accept": {"text/event-stream"}})
		if err != nil {
			return err
		}
		if err := expectProblem(r, http.StatusBadRequest, problem("VALIDATION_ERROR", "after must be a non-negative integer")); err != nil {
			return fmt.Errorf("after=%s: %w", cursor, err)
		}
	}
	return nil
}

func (c *cases) malformedJSON(ctx context.Context) error {
	r, err := c.s.raw.do(ctx, http.MethodPost, "/v1/executions", []byte("{"), nil)
	if err != nil {
		return err
	}
	return expectProblem(r, http.StatusBadRequest, problem("VALIDATION_ERROR", "Request body is not valid JSON"))
}

func (c *cases) requiredBody(ctx context.Context) error {
	r, err := c.s.raw.do(ctx, http.MethodPost, "/v1/executions", []byte{}, nil)
	if err != nil {
		return err
	}
	return expectProblem(r, http.StatusBadRequest, problem("VALIDATION_ERROR", "Request body is required"))
}

func (c *cases) notFound(ctx context.Context) error {
	r, err := c.s.raw.do(ctx, http.MethodGet, "/v1/conversations/"+missingConversation, nil, nil)
	if err != nil {
		return err
	}
	if err := expectProblem(r, http.StatusNotFound, problem("NOT_FOUND", "Conversation not found: "+missingConversation)); err != nil {
		return fmt.Errorf("GET conversation: %w", err)
	}
	r, err = c.s.raw.do(ctx, http.MethodGet, "/v1/executions/"+missingExecution, nil, nil)
	if err != nil {
		return err
	}
	if err := expectProblem(r, http.StatusNotFound, problem("NOT_FOUND", "Execution not found: "+missingExecution)); err != nil {
		return fmt.Errorf("GET execution: %w", err)
	}
	r, err = c.s.raw.postJSON(ctx, "/v1/executions", map[string]any{
		"conversationId": missingConversation, "providerId": c.s.opts.ProviderID, "input": "x"})
	if err != nil {
		return err
	}
	if err := expectProblem(r, http.StatusNotFound, problem("NOT_FOUND", "Conversation not found: "+missingConversation)); err != nil {
		return fmt.Errorf("start in an unknown conversation: %w", err)
	}
	return nil
}

// conversation creates a conversation for one case.
func (c *cases) conversation(ctx context.Context) (string, error) {
	conv, err := c.s.sdk.CreateConversation(ctx, api.CreateConversationRequest{Metadata: &api.JSONObject{"suite": "conformance"}})
	return conv.ID, err
}

// start posts a start request and remembers the execution for cleanup.
func (c *cases) start(ctx context.Context, req map[string]any) (rawResponse, api.Execution, error) {
	r, err := c.s.raw.postJSON(ctx, "/v1/executions", req)
	if err != nil {
		return r, api.Execution{}, err
	}
	var exec api.Execution
	if r.Status == http.StatusAccepted {
		if err := json.Unmarshal(r.Body, &exec); err != nil || exec.ID == "" {
			return r, exec, fmt.Errorf("start: 202 with a body that is not an Execution: %s", clip(r.Body))
		}
		c.s.track(exec.ID)
	}
	return r, exec, nil
}

func (c *cases) providerNotFound(ctx context.Context) error {
	conv, err := c.conversation(ctx)
	if err != nil {
		return err
	}
	r, _, err := c.start(ctx, map[string]any{"conversationId": conv, "providerId": missingProvider, "input": "x"})
	if err != nil {
		return err
	}
	return expectProblem(r, http.StatusNotFound, problem("PROVIDER_NOT_FOUND", "Provider not found: "+missingProvider))
}

func (c *cases) capabilityUnsupported(ctx context.Context) error {
	capability := "extension.sandbox"
	if level, ok := c.manifest.Capabilities[capability]; ok && level != api.SupportLevelUnsupported {
		capability = "conformance.undeclared-capability" // this provider does sandbox; probe a name nobody declares
	}
	conv, err := c.conversation(ctx)
	if err != nil {
		return err
	}
	r, _, err := c.start(ctx, map[string]any{"conversationId": conv, "providerId": c.s.opts.ProviderID, "input": "x",
		"requiredCapabilities": []string{capability}})
	if err != nil {
		return err
	}
	want := problem("CAPABILITY_UNSUPPORTED", "Provider "+c.s.opts.ProviderID+" does not support required capabilities")
	want["details"] = map[string]any{"providerId": c.s.opts.ProviderID, "capabilities": []string{capability}}
	return expectProblem(r, http.StatusUnprocessableEntity, want)
}

func (c *cases) idempotencyReuse(ctx context.Context) error {
	conv, err := c.conversation(ctx)
	if err != nil {
		return err
	}
	c.idemRequest = map[string]any{"conversationId": conv, "providerId": c.s.opts.ProviderID,
		"input": c.s.opts.Input, "idempotencyKey": "conformance-http-idempotency"}
	r, first, err := c.start(ctx, c.idemRequest)
	if err != nil {
		return err
	}
	if r.Status != http.StatusAccepted {
		return fmt.Errorf("first start: status %d, want 202: %s", r.Status, clip(r.Body))
	}
	r, again, err := c.start(ctx, c.idemRequest)
	if err != nil {
		return err
	}
	if r.Status != http.StatusAccepted {
		return fmt.Errorf("repeated start: status %d, want 202: %s", r.Status, clip(r.Body))
	}
	if again.ID != first.ID {
		return fmt.Errorf("repeated start with the same key answered execution %s, want %s", again.ID, first.ID)
	}
	return nil
}

func (c *cases) idempotencyConflict(ctx context.Context) error {
	if c.idemRequest == nil {
		return errors.New("not run: http/idempotency-reuse could not start an execution")
	}
	conflicting := map[string]any{}
	for k, v := range c.idemRequest {
		conflicting[k] = v
	}
	conflicting["input"] = c.s.opts.Input + " (conflicting request)"
	r, _, err := c.start(ctx, conflicting)
	if err != nil {
		return err
	}
	return expectProblem(r, http.StatusConflict, problem("IDEMPOTENCY_CONFLICT", "Idempotency key was already used with a different execution request"))
}

// finishedExecution runs one execution to its end, once, for the replay cases.
func (c *cases) finishedExecution(ctx context.Context) (*finishedExecution, error) {
	if c.finished != nil || c.finishedErr != nil {
		return c.finished, c.finishedErr
	}
	c.finished, c.finishedErr = func() (*finishedExecution, error) {
		conv, err := c.conversation(ctx)
		if err != nil {
			return nil, err
		}
		exec, err := c.s.sdk.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv, ProviderID: c.s.opts.ProviderID, Input: "hello runtime"})
		if err != nil {
			return nil, err
		}
		c.s.track(exec.ID)
		final, err := c.waitTerminal(ctx, exec.ID)
		if err != nil {
			return nil, err
		}
		events, err := c.s.replay(ctx, exec.ID, 0)
		if err != nil {
			return nil, err
		}
		if len(events) < 3 {
			return nil, fmt.Errorf("execution %s ended with %d events", exec.ID, len(events))
		}
		return &finishedExecution{id: exec.ID, state: final.State, events: events}, nil
	}()
	if c.finishedErr != nil {
		c.finishedErr = fmt.Errorf("running an execution to replay: %w", c.finishedErr)
	}
	return c.finished, c.finishedErr
}

// waitTerminal follows the raw event stream to its end and returns the final snapshot. (The
// SDK's WaitForTerminal would refuse a stream with a gap; here the gap is another check's
// business.)
func (c *cases) waitTerminal(ctx context.Context, id string) (api.Execution, error) {
	if _, err := c.s.collect(ctx, id, Scenario{}); err != nil {
		return api.Execution{}, err
	}
	return c.s.sdk.GetExecution(ctx, id)
}

// readStream reads a whole SSE response after the cursor; it fails if the server does not
// close the stream after the terminal event (the context ends first).
func (c *cases) readStream(ctx context.Context, id string, after int64) ([]sseMessage, error) {
	st, err := c.s.raw.openStream(ctx, id, after)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var msgs []sseMessage
	for m, err := range st.messages {
		if err != nil {
			if ctx.Err() != nil && len(msgs) > 0 && sdk.IsTerminalEvent(msgs[len(msgs)-1].Event.Type) {
				return msgs, errors.New("the server kept the stream open after the terminal event")
			}
			return msgs, err
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

func (c *cases) sseReplay(ctx context.Context) error {
	f, err := c.finishedExecution(ctx)
	if err != nil {
		return err
	}
	msgs, err := c.readStream(ctx, f.id, 2)
	if err != nil {
		return err
	}
	if len(msgs) == 0 {
		return errors.New("SSE replay after=2 returned no events")
	}
	for i, m := range msgs {
		if want := int64(3 + i); m.Event.Sequence != want {
			return fmt.Errorf("SSE replay after=2: event %d has sequence %d, want %d", i+1, m.Event.Sequence, want)
		}
	}
	last := msgs[len(msgs)-1].Event
	want := f.state.TerminalEvent()
	if last.Type != want {
		return fmt.Errorf("SSE replay after=2 ended with %s, want %s", last.Type, want)
	}
	if last.Sequence != f.events[len(f.events)-1].Sequence {
		return fmt.Errorf("SSE replay after=2 ended at sequence %d, the execution has %d events", last.Sequence, len(f.events))
	}
	return nil
}

func (c *cases) sseFraming(ctx context.Context) error {
	f, err := c.finishedExecution(ctx)
	if err != nil {
		return err
	}
	msgs, err := c.readStream(ctx, f.id, 0)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Type != string(m.Event.Type) {
			return fmt.Errorf("message of event %s has event: %q, want %q", m.Event.ID, m.Type, m.Event.Type)
		}
		if want := strconv.FormatInt(m.Event.Sequence, 10); m.ID != want {
			return fmt.Errorf("message of event %s has id: %q, want the sequence %q", m.Event.ID, m.ID, want)
		}
		if m.Event.ExecutionID != f.id || m.Event.ID != f.id+":"+strconv.FormatInt(m.Event.Sequence, 10) {
			return fmt.Errorf("event id %q of execution %q, want %s:<sequence>", m.Event.ID, m.Event.ExecutionID, f.id)
		}
	}
	if jsonString(eventsOf(msgs)) != jsonString(f.events) {
		return fmt.Errorf("the SSE stream carried sequences %v, the JSON replay %v", sequences(eventsOf(msgs)), sequences(f.events))
	}
	return nil
}

func (c *cases) jsonReplayTerminal(ctx context.Context) error {
	f, err := c.finishedExecution(ctx)
	if err != nil {
		return err
	}
	count := int64(len(f.events))
	list, err := c.eventList(ctx, f.id, count-1)
	if err != nil {
		return err
	}
	if len(list.Events) != 1 || jsonString(list.Events[0]) != jsonString(f.events[count-1]) {
		return fmt.Errorf("replay after %d returned sequences %v, want exactly the terminal event %d", count-1, sequences(list.Events), count)
	}
	if !sdk.IsTerminalEvent(list.Events[0].Type) {
		return fmt.Errorf("the last event is %s, not a terminal event", list.Events[0].Type)
	}
	if list.NextCursor != count {
		return fmt.Errorf("nextCursor %d, want %d", list.NextCursor, count)
	}
	return nil
}

func (c *cases) jsonReplayBeyondEnd(ctx context.Context) error {
	f, err := c.finishedExecution(ctx)
	if err != nil {
		return err
	}
	after := int64(len(f.events)) + 5
	list, err := c.eventList(ctx, f.id, after)
	if err != nil {
		return err
	}
	if len(list.Events) != 0 || list.NextCursor != after {
		return fmt.Errorf("replay after %d: %d events, nextCursor %d; want none and nextCursor %d (echoed)", after, len(list.Events), list.NextCursor, after)
	}
	return nil
}

// eventList is the raw JSON replay: status 200 and an EventList whose events is an array.
func (c *cases) eventList(ctx context.Context, id string, after int64) (api.EventList, error) {
	r, err := c.s.raw.do(ctx, http.MethodGet, "/v1/executions/"+escape(id)+"/events?after="+strconv.FormatInt(after, 10), nil, nil)
	if err != nil {
		return api.EventList{}, err
	}
	var raw struct {
		Events     *[]api.RuntimeEvent `json:"events"`
		NextCursor *int64              `json:"nextCursor"`
	}
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &raw) != nil || raw.Events == nil || raw.NextCursor == nil {
		return api.EventList{}, fmt.Errorf("JSON replay after %d: status %d, body %s; want 200 {events:[…], nextCursor}", after, r.Status, clip(r.Body))
	}
	return api.EventList{Events: *raw.Events, NextCursor: *raw.NextCursor}, nil
}

func (c *cases) cancelTerminalNoop(ctx context.Context) error {
	f, err := c.finishedExecution(ctx)
	if err != nil {
		return err
	}
	r, err := c.s.raw.postJSON(ctx, "/v1/executions/"+escape(f.id)+":cancel", map[string]any{"reason": "too late"})
	if err != nil {
		return err
	}
	var exec api.Execution
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &exec) != nil {
		return fmt.Errorf("cancel of a finished execution: status %d, body %s; want 200 and the execution", r.Status, clip(r.Body))
	}
	if exec.State != f.state {
		return fmt.Errorf("cancel of a %s execution answered state %s", f.state, exec.State)
	}
	events, err := c.s.replay(ctx, f.id, 0)
	if err != nil {
		return err
	}
	if len(events) != len(f.events) {
		return fmt.Errorf("cancel of a finished execution appended events: %d, was %d", len(events), len(f.events))
	}
	return nil
}

// awaitApproval starts a mock execution that asks for approval and reads its stream until the
// action.required event, then drops the connection. It returns the execution and action ids.
func (c *cases) awaitApproval(ctx context.Context, config api.JSONObject) (string, string, error) {
	conv, err := c.conversation(ctx)
	if err != nil {
		return "", "", err
	}
	exec, err := c.s.sdk.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv, ProviderID: c.s.opts.ProviderID,
		Input: c.s.opts.Input, Config: config, RequiredCapabilities: &[]string{"action.approval"}})
	if err != nil {
		return "", "", err
	}
	c.s.track(exec.ID)
	st, err := c.s.raw.openStream(ctx, exec.ID, 0)
	if err != nil {
		return exec.ID, "", err
	}
	defer st.Close() // the truncation: the client goes away mid-stream
	for m, err := range st.messages {
		if err != nil {
			return exec.ID, "", err
		}
		if m.Event.Type == api.StandardEventTypeActionRequired {
			action, _ := m.Event.Data.AsActionRequest()
			id := action.ID
			if id == "" {
				return exec.ID, "", fmt.Errorf("action.required event %s has no data.id", m.Event.ID)
			}
			return exec.ID, id, nil
		}
		if sdk.IsTerminalEvent(m.Event.Type) {
			return exec.ID, "", fmt.Errorf("the execution ended with %s without asking for approval", m.Event.Type)
		}
	}
	return exec.ID, "", errors.New("the event stream ended before action.required")
}

// approvalExecution sets up, once, the execution the approval cases walk through.
func (c *cases) approvalExecution(ctx context.Context) *approvalExecution {
	if c.approval == nil {
		a := &approvalExecution{}
		a.id, a.actionID, a.err = c.awaitApproval(ctx, api.JSONObject{"requireApproval": true, "artifactName": artifactName})
		if a.err != nil {
			a.err = fmt.Errorf("setting up an execution waiting for approval: %w", a.err)
		}
		c.approval = a
	}
	return c.approval
}

// respond posts an action response body as given.
func (c *cases) respond(ctx context.Context, id, actionID string, body []byte) (rawResponse, error) {
	return c.s.raw.do(ctx, http.MethodPost, "/v1/executions/"+escape(id)+"/actions/"+escape(actionID)+":respond", body,
		http.Header{"Content-Type": {"application/json"}})
}

// expectState reads the execution and checks its state.
func (c *cases) expectState(ctx context.Context, id string, want api.ExecutionState) error {
	exec, err := c.s.sdk.GetExecution(ctx, id)
	if err != nil {
		return err
	}
	if exec.State != want {
		return fmt.Errorf("execution is %s, want %s", exec.State, want)
	}
	return nil
}

func (c *cases) invalidActionResponse(ctx context.Context) error {
	a := c.approvalExecution(ctx)
	if a.err != nil {
		return a.err
	}
	r, err := c.respond(ctx, a.id, a.actionID, []byte(`{"approved":"yes"}`))
	if err != nil {
		return err
	}
	if err := expectProblem(r, http.StatusBadRequest, problem("VALIDATION_ERROR", "Invalid action response")); err != nil {
		return err
	}
	return c.expectState(ctx, a.id, api.ExecutionStateAwaitingApproval)
}

func (c *cases) actionNotFound(ctx context.Context) error {
	a := c.approvalExecution(ctx)
	if a.err != nil {
		return a.err
	}
	r, err := c.respond(ctx, a.id, missingAction, []byte(`{"approved":true}`))
	if err != nil {
		return err
	}
	if err := expectProblem(r, http.StatusNotFound, problem("ACTION_NOT_FOUND", "Action not found: "+missingAction)); err != nil {
		return err
	}
	return c.expectState(ctx, a.id, api.ExecutionStateAwaitingApproval)
}

func (c *cases) approvalWithArtifact(ctx context.Context) error {
	a := c.approvalExecution(ctx)
	if a.err != nil {
		return a.err
	}
	r, err := c.respond(ctx, a.id, a.actionID, []byte(`{"approved":true}`))
	if err != nil {
		return err
	}
	var exec api.Execution
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &exec) != nil {
		return fmt.Errorf("approval: status %d, body %s; want 200 and the execution", r.Status, clip(r.Body))
	}
	a.approved = true
	if exec.State == api.ExecutionStateAwaitingApproval {
		return errors.New("approval answered an execution still awaiting_approval")
	}
	final, err := c.waitTerminal(ctx, a.id)
	if err != nil {
		return err
	}
	if final.State != api.ExecutionStateSucceeded {
		return fmt.Errorf("approved execution ended %s, want succeeded", final.State)
	}
	artifacts, err := c.s.sdk.ListArtifacts(ctx, a.id)
	if err != nil {
		return err
	}
	if len(artifacts) != 1 || artifacts[0].Name != artifactName {
		return fmt.Errorf("artifacts %s, want one named %s", jsonString(artifacts), artifactName)
	}
	events, err := c.s.replay(ctx, a.id, 0)
	if err != nil {
		return err
	}
	var created []api.RuntimeEvent
	for _, e := range events {
		if e.Type == api.StandardEventTypeArtifactCreated {
			created = append(created, e)
		}
	}
	// Compared as values: event data keeps the server's key order, the listed artifact is
	// re-encoded by our types, and JSON objects are unordered.
	if len(created) != 1 || !sameJSONValue(created[0].Data, artifacts[0]) {
		return fmt.Errorf("artifact.created events %s, want one whose data equals the listed artifact %s", jsonString(created), jsonString(artifacts[0]))
	}
	return nil
}

func (c *cases) duplicateActionResponse(ctx context.Context) error {
	a := c.approvalExecution(ctx)
	if a.err != nil {
		return a.err
	}
	if !a.approved {
		return errors.New("not run: http/approval-with-artifact did not approve the action")
	}
	r, err := c.respond(ctx, a.id, a.actionID, []byte(`{"approved":true}`))
	if err != nil {
		return err
	}
	return expectProblem(r, http.StatusConflict, problem("ACTION_ALREADY_RESOLVED", "Action already resolved: "+a.actionID))
}

// truncatedStream: a client's stream is cut while the execution waits for approval; the
// execution keeps waiting; a cancel ends it with exactly one run.cancelled; the abandoned action
// is then unknown.
func (c *cases) truncatedStream(ctx context.Context) error {
	id, actionID, err := c.awaitApproval(ctx, api.JSONObject{"requireApproval": true})
	if err != nil {
		return err
	}
	if err := c.expectState(ctx, id, api.ExecutionStateAwaitingApproval); err != nil {
		return fmt.Errorf("after the stream was cut: %w", err)
	}
	exec, err := c.s.sdk.CancelExecution(ctx, id, api.CancelExecutionRequest{Reason: new("caller stopped")})
	if err != nil {
		return err
	}
	if exec.State != api.ExecutionStateCancelled {
		return fmt.Errorf("cancel answered state %s, want cancelled", exec.State)
	}
	events, err := c.s.replay(ctx, id, 0)
	if err != nil {
		return err
	}
	if len(events) == 0 {
		return errors.New("the cancelled execution has no events")
	}
	n := 0
	for _, e := range events {
		if sdk.IsTerminalEvent(e.Type) {
			n++
		}
	}
	last := events[len(events)-1]
	if cancelled, _ := last.Data.AsRunCancelledData(); n != 1 || last.Type != api.StandardEventTypeRunCancelled || cancelled.Reason == nil || *cancelled.Reason != "caller stopped" {
		return fmt.Errorf("events end with %s %s after %d terminal events; want exactly one run.cancelled {reason:\"caller stopped\"}, last", last.Type, jsonString(last.Data), n)
	}
	r, err := c.respond(ctx, id, actionID, []byte(`{"approved":true}`))
	if err != nil {
		return err
	}
	if err := expectProblem(r, http.StatusNotFound, problem("ACTION_NOT_FOUND", "Action not found: "+actionID)); err != nil {
		return fmt.Errorf("answering the abandoned action: %w", err)
	}
	return nil
}

func eventsOf(msgs []sseMessage) []api.RuntimeEvent {
	out := make([]api.RuntimeEvent, len(msgs))
	for i, m := range msgs {
		out[i] = m.Event
	}
	return out
}

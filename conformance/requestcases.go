package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// The HTTP cases of requests the server must refuse or answer without an execution: health, the
// runtime's description, invalid bodies and cursors, malformed JSON, unknown ids.

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

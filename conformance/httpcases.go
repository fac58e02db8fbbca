package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

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

package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The HTTP cases of an approval: an execution walked to its pending action, then invalid, unknown,
// artifact-carrying and duplicate responses.

type approvalExecution struct {
	id, actionID string
	err          error // why the approval execution could not be set up
	approved     bool
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

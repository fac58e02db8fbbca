package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// WaitForTerminal waits until the execution has ended and returns its final snapshot (state
// succeeded, failed or cancelled). It follows the event stream the way Events does, reconnecting
// and resuming as needed (dead streams included), for as long as ctx lives or until
// WithReconnectTimeout gives up with ErrNoProgress. A failed or cancelled execution is a normal
// result here, not an error.
func (c *Client) WaitForTerminal(ctx context.Context, id string) (api.Execution, error) {
	exec, err := c.GetExecution(ctx, id)
	if err != nil || IsTerminalState(exec.State) {
		return exec, err
	}
	for _, err := range c.Events(ctx, id, 0) {
		if err != nil {
			return exec, err
		}
	}
	return c.finalSnapshot(ctx, id)
}

// finalSnapshot reads the execution after its terminal event was seen.
func (c *Client) finalSnapshot(ctx context.Context, id string) (api.Execution, error) {
	exec, err := c.GetExecution(ctx, id)
	if err == nil && !IsTerminalState(exec.State) {
		err = fmt.Errorf("harness: execution %s is %s after its terminal event", id, exec.State)
	}
	return exec, err
}

// RunHandlers are the callbacks of Run. All are optional except OnAction for executions that
// ask for approval or input. They are called one at a time, in event order, on Run's goroutine.
type RunHandlers struct {
	// OnAction answers an action.required event (an approval or input request); Run sends the
	// answer with RespondToAction. An error from it ends Run with that error and leaves the
	// execution waiting for an answer (cancel it, or answer it yourself). If OnAction is nil,
	// an action request ends Run with ErrNoActionHandler.
	OnAction func(ctx context.Context, action api.ActionRequest) (api.ActionResponse, error)
	// OnEvent sees every event, before Run acts on it.
	OnEvent func(event api.RuntimeEvent)
	// OnText receives the text of each output.text.delta event as it arrives.
	OnText func(text string)
}

// RunResult is what Run returns.
type RunResult struct {
	// Execution is the final snapshot: succeeded, failed (see Execution.Error) or cancelled.
	// When Run returns an error it is the latest snapshot Run had (Id set once started), so the
	// caller can resume with WaitForTerminal or cancel it.
	Execution api.Execution
	// Output is Execution.FinalOutput when the execution succeeded, otherwise empty.
	Output string
	// Replayed reports that the execution was started by an earlier call with the same
	// req.IdempotencyKey, not by this Run (see the option Replayed of StartExecution).
	Replayed bool
}

// Succeeded reports whether the execution ended in state succeeded.
func (r RunResult) Succeeded() bool {
	return r.Execution.State == api.ExecutionStateSucceeded
}

// ErrNoActionHandler is returned by Run when the execution asks for approval or input and
// RunHandlers.OnAction is nil.
var ErrNoActionHandler = errors.New("harness: the execution requested an action and RunHandlers.OnAction is nil")

// Run is the one-call path: it starts an execution (with an idempotency key, see
// StartExecution), follows its events, answers each approval or input request with
// handlers.OnAction, and returns once the execution has ended. A failed or cancelled execution
// is a result, not an error: check RunResult.Succeeded or Execution.State. The error is for
// what kept Run from seeing the end: the start was refused (an *Error), ctx ended, the stream
// made no progress for WithReconnectTimeout (ErrNoProgress), the handler failed. Ending ctx
// stops observing; it does not cancel the execution. Each call Run makes is retried as that
// call is on its own, and the events are followed as Events follows them.
func (c *Client) Run(ctx context.Context, req api.StartExecutionRequest, handlers RunHandlers) (RunResult, error) {
	var replayed bool
	exec, err := c.StartExecution(ctx, req, Replayed(&replayed))
	if err != nil {
		return RunResult{}, err
	}
	for event, err := range c.Events(ctx, exec.Id, 0) {
		if err != nil {
			return RunResult{Execution: exec, Replayed: replayed}, err
		}
		if handlers.OnEvent != nil {
			handlers.OnEvent(event)
		}
		switch event.Type {
		case api.StandardEventTypeOutputTextDelta:
			if text, ok := event.Data["text"].(string); ok && handlers.OnText != nil {
				handlers.OnText(text)
			}
		case api.StandardEventTypeActionRequired:
			if err := c.answerAction(ctx, exec.Id, event, handlers.OnAction); err != nil {
				return RunResult{Execution: exec, Replayed: replayed}, err
			}
		}
	}
	final, err := c.finalSnapshot(ctx, exec.Id)
	if err != nil {
		return RunResult{Execution: exec, Replayed: replayed}, err
	}
	result := RunResult{Execution: final, Replayed: replayed}
	if final.State == api.ExecutionStateSucceeded && final.FinalOutput != nil {
		result.Output = *final.FinalOutput
	}
	return result, nil
}

// answerAction asks onAction about the request in an action.required event and sends the
// answer.
func (c *Client) answerAction(ctx context.Context, executionID string, event api.RuntimeEvent,
	onAction func(context.Context, api.ActionRequest) (api.ActionResponse, error)) error {
	action, err := actionRequestOf(event)
	if err != nil {
		return err
	}
	if onAction == nil {
		return fmt.Errorf("%w (action %s: %s)", ErrNoActionHandler, action.Id, action.Title)
	}
	answer, err := onAction(ctx, action)
	if err != nil {
		return fmt.Errorf("harness: action %s: %w", action.Id, err)
	}
	_, err = c.RespondToAction(ctx, executionID, action.Id, answer)
	if errors.Is(err, ErrActionAlreadyResolved) || errors.Is(err, ErrActionNotFound) {
		// Answered by someone else, or abandoned because the execution was cancelled or
		// failed meanwhile: either way the events that follow say what happened.
		c.log.Debug("harness: run: action no longer pending", "execution", executionID, "action", action.Id, "error", err)
		return nil
	}
	return err
}

// actionRequestOf reads the ActionRequest that is the data of an action.required event.
func actionRequestOf(event api.RuntimeEvent) (api.ActionRequest, error) {
	var action api.ActionRequest
	raw, err := json.Marshal(event.Data)
	if err == nil {
		err = json.Unmarshal(raw, &action)
	}
	if err == nil && action.Id == "" {
		err = errors.New("no action id")
	}
	if err != nil {
		return action, fmt.Errorf("harness: event %s: unreadable action request: %w", event.Id, err)
	}
	return action, nil
}

package sdk

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
	// a pending action request ends Run with an *ActionRequiredError (see ErrActionRequired).
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
	// caller can resume with WaitForTerminal or cancel it; with an *ActionRequiredError it is
	// the snapshot read once the request arrived (awaiting_approval or awaiting_input).
	Execution api.Execution
	// Output is Execution.FinalOutput when the execution succeeded, otherwise empty.
	Output string
	// Replayed reports that the execution was started by an earlier call with the same
	// req.IdempotencyKey, not by this Run (see the option Replayed of StartExecution).
	Replayed bool
	// CancelReason is why a cancelled execution was cancelled, when a reason was given: the
	// snapshot's cancelReason (a harness-edge extension), else the reason of the run.cancelled
	// event Run saw. For a turn a newer message of an interrupt conversation cancelled it is
	// "Interrupted by exec_…" (see InterruptedBy). Empty otherwise.
	CancelReason string
}

// interruptedPrefix begins the cancel reason the server gives a turn that a newer start of a
// conversation under the interrupt busy policy cancelled ("Interrupted by {id}",
// docs/protocol.md §15.7).
const interruptedPrefix = "Interrupted by "

// InterruptedBy is the id of the execution whose start interrupted this one (busy policy
// interrupt), or "" when it was not interrupted.
func (r RunResult) InterruptedBy() string {
	by, ok := strings.CutPrefix(r.CancelReason, interruptedPrefix)
	if !ok || r.Execution.State != api.ExecutionStateCancelled || strings.ContainsAny(by, " \t\n") {
		return ""
	}
	return by
}

// Succeeded reports whether the execution ended in state succeeded.
func (r RunResult) Succeeded() bool {
	return r.Execution.State == api.ExecutionStateSucceeded
}

// ErrActionRequired is what the error of Run matches (errors.Is) when the execution asks for
// approval or input, RunHandlers.OnAction is nil, and the request is still pending. The error
// is an *ActionRequiredError, which carries the execution and the request (errors.As).
//
// Run returns at once rather than wait: nobody on its side can answer, and an action waits
// until someone else answers it (or, on a server that sets one, until its ExpiresAt), possibly
// forever. The execution
// stays waiting for its answer. To go on, answer it (RespondToAction with Action.ID) and follow
// the rest with WaitForTerminal or Events, or give up with CancelExecution.
var ErrActionRequired = errors.New("harness: the execution waits for an action and RunHandlers.OnAction is nil")

// ErrNoActionHandler is the former name of ErrActionRequired, which it equals.
//
// Deprecated: use ErrActionRequired, and errors.As with *ActionRequiredError for the details.
var ErrNoActionHandler = ErrActionRequired

// ActionRequiredError is the error Run returns for an approval or input request it has no
// handler for. It matches ErrActionRequired.
type ActionRequiredError struct {
	// Execution is the snapshot read once the request arrived: state awaiting_approval or
	// awaiting_input (the server's word, not a guess from the events).
	Execution api.Execution
	// Action is the pending request: answer it with RespondToAction(ctx, Execution.ID, Action.ID, …).
	Action api.ActionRequest
}

func (e *ActionRequiredError) Error() string {
	return fmt.Sprintf("harness: execution %s is %s: %s %s (%q) needs an answer and RunHandlers.OnAction is nil; "+
		"answer it with RespondToAction and follow with WaitForTerminal, or cancel the execution",
		e.Execution.ID, e.Execution.State, e.Action.Kind, e.Action.ID, e.Action.Title)
}

// Is makes errors.Is(err, ErrActionRequired) true.
func (e *ActionRequiredError) Is(target error) bool { return target == ErrActionRequired }

// Run is the one-call path: it starts an execution (with an idempotency key, see
// StartExecution), follows its events, answers each approval or input request with
// handlers.OnAction, and returns once the execution has ended. A failed or cancelled execution
// is a result, not an error: check RunResult.Succeeded or Execution.State. The error is for
// what kept Run from seeing the end: the start was refused (an *Error), ctx ended, the stream
// made no progress for WithReconnectTimeout (ErrNoProgress), the handler failed, or there was
// no handler for a pending action (ErrActionRequired: Run returns then, it does not wait for
// someone else to answer). Ending ctx stops observing; it does not cancel the execution. Each
// call Run makes is retried as that call is on its own, and the events are followed as Events
// follows them.
//
// Run starts and streams in one request where the server can (a harness-edge extension: the
// start asks for text/event-stream), and otherwise starts, then streams, as StartExecution and
// Events do; the guarantees are the same either way (see start_stream.go). A streamed start
// carries the final snapshot in its trailer, which Run uses instead of asking for it (one
// request per execution); without the trailer it asks. It carries no earlier snapshot, so if Run
// ends with an error before it could read one, and ctx has ended too, RunResult.Execution holds
// only the id and the request's conversation and provider.
func (c *Client) Run(ctx context.Context, req api.StartExecutionRequest, handlers RunHandlers) (RunResult, error) {
	start := newStartCall(req)
	var exec api.Execution  // the latest snapshot Run has (only the id after a streamed start)
	var cancelReason string // from run.cancelled, for a server whose snapshot does not carry it
	for event, err := range c.startAndFollow(ctx, start) {
		if exec.ID == "" {
			exec = start.exec
		}
		if err != nil {
			return RunResult{Execution: c.latestSnapshot(ctx, exec), Replayed: start.replayed}, err
		}
		if handlers.OnEvent != nil {
			handlers.OnEvent(event)
		}
		switch event.Type {
		case api.StandardEventTypeRunCancelled:
			if data, err := event.Data.AsRunCancelledData(); err == nil && data.Reason != nil {
				cancelReason = *data.Reason
			}
		case api.StandardEventTypeOutputTextDelta:
			if delta, err := event.Data.AsTextDeltaData(); err == nil && handlers.OnText != nil {
				handlers.OnText(delta.Text)
			}
		case api.StandardEventTypeActionRequired:
			if handlers.OnAction == nil {
				snapshot, err := c.unansweredAction(ctx, event)
				if snapshot.ID != "" {
					exec = snapshot
				}
				if err != nil {
					return RunResult{Execution: exec, Replayed: start.replayed}, err
				}
				continue // answered elsewhere, or the execution ended: the events say how
			}
			if err := c.answerAction(ctx, exec.ID, event, handlers.OnAction); err != nil {
				if latest, getErr := c.GetExecution(ctx, exec.ID); getErr == nil {
					exec = latest // most likely still waiting for the answer the handler did not give
				}
				return RunResult{Execution: exec, Replayed: start.replayed}, err
			}
		}
	}
	if exec.ID == "" {
		exec = start.exec
	}
	var final api.Execution
	var err error
	if start.final != nil {
		final = *start.final // the streamed start's trailer (start_stream.go)
	} else {
		final, err = c.finalSnapshot(ctx, exec.ID)
	}
	if err != nil {
		return RunResult{Execution: c.latestSnapshot(ctx, exec), Replayed: start.replayed}, err
	}
	result := RunResult{Execution: final, Replayed: start.replayed}
	if final.State == api.ExecutionStateSucceeded && final.FinalOutput != nil {
		result.Output = *final.FinalOutput
	}
	if final.State == api.ExecutionStateCancelled {
		result.CancelReason = cancelReason
		if final.CancelReason != nil {
			result.CancelReason = *final.CancelReason
		}
	}
	return result, nil
}

// latestSnapshot is exec, read from the server when all Run has of it is the id a streamed start
// named (and ctx still allows a read).
func (c *Client) latestSnapshot(ctx context.Context, exec api.Execution) api.Execution {
	if exec.ID == "" || exec.State != "" || ctx.Err() != nil {
		return exec
	}
	if latest, err := c.GetExecution(ctx, exec.ID); err == nil {
		return latest
	}
	return exec
}

// answerAction asks onAction about the request in an action.required event and sends the
// answer.
func (c *Client) answerAction(ctx context.Context, executionID string, event api.RuntimeEvent,
	onAction func(context.Context, api.ActionRequest) (api.ActionResponse, error)) error {
	action, err := actionRequestOf(event)
	if err != nil {
		return err
	}
	answer, err := onAction(ctx, action)
	if err != nil {
		return fmt.Errorf("harness: action %s: %w", action.ID, err)
	}
	_, err = c.RespondToAction(ctx, executionID, action.ID, answer)
	if errors.Is(err, ErrActionAlreadyResolved) || errors.Is(err, ErrActionNotFound) {
		// Answered by someone else, or abandoned because the execution was cancelled or
		// failed meanwhile: either way the events that follow say what happened.
		c.log.Debug("harness: run: action no longer pending", "execution", executionID, "action", action.ID, "error", err)
		return nil
	}
	return err
}

// unansweredAction handles an action.required event Run has no handler for. It reads the
// execution and returns that snapshot, with the *ActionRequiredError that ends Run if the
// execution still waits for an answer. If it does not (someone else answered, the execution was
// cancelled or failed meanwhile, or Run replays an execution whose action was answered long
// ago), the error is nil and Run follows on.
func (c *Client) unansweredAction(ctx context.Context, event api.RuntimeEvent) (api.Execution, error) {
	action, err := actionRequestOf(event)
	if err != nil {
		return api.Execution{}, err
	}
	exec, err := c.GetExecution(ctx, event.ExecutionID)
	if err != nil {
		return api.Execution{}, fmt.Errorf("harness: execution %s requested %s %s and RunHandlers.OnAction is nil; reading its state: %w",
			event.ExecutionID, action.Kind, action.ID, err)
	}
	if exec.State != api.ExecutionStateAwaitingApproval && exec.State != api.ExecutionStateAwaitingInput {
		return exec, nil
	}
	return exec, &ActionRequiredError{Execution: exec, Action: action}
}

// actionRequestOf reads the ActionRequest that is the data of an action.required event.
func actionRequestOf(event api.RuntimeEvent) (api.ActionRequest, error) {
	action, err := event.Data.AsActionRequest()
	if err == nil && action.ID == "" {
		err = errors.New("no action id")
	}
	if err != nil {
		return action, fmt.Errorf("harness: event %s: unreadable action request: %w", event.ID, err)
	}
	return action, nil
}

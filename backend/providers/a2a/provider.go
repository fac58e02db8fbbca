package a2a

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/providers/internal/running"
)

// Provider serves one A2A agent. It implements backend.Provider, backend.Canceler and
// backend.Resumer.
type Provider struct {
	agent *Agent

	running running.Table[a2a.TaskID] // execution id → its task, for Cancel
}

var (
	_ backend.Provider = (*Provider)(nil)
	_ backend.Canceler = (*Provider)(nil)
	_ backend.Resumer  = (*Provider)(nil)
)

// Run sends the execution's input as the first message of a new A2A task and relays the task.
func (p *Provider) Run(ctx context.Context, run *backend.Run) (backend.Result, error) {
	e, ok := p.running.Register(run.ExecutionID())
	if !ok {
		return backend.Result{}, errors.New("A2A execution is already running")
	}
	defer p.running.Unregister(ctx, run.ExecutionID(), e)
	// The runtime cancels ctx before it calls Cancel: registering first and checking after
	// means a Cancel that found no entry is always followed by this check.
	if ctx.Err() != nil {
		e.Started("")
		return backend.Result{}, ctx.Err()
	}
	t, err := p.newTaskRun(run, e, checkpoint{})
	if err != nil {
		e.Started("")
		return backend.Result{}, err
	}
	return t.start(ctx)
}

// Resume continues an execution after an edge restart from its last checkpoint: the A2A task
// lived on at the agent, and relaying goes on after what the checkpoint accounts for.
func (p *Provider) Resume(ctx context.Context, run *backend.Run) (backend.Result, error) {
	raw := run.Checkpoint()
	if raw == nil {
		return p.Run(ctx, run) // stopped before the first message was sent
	}
	var cp checkpoint
	if err := json.Unmarshal(raw, &cp); err != nil || cp.TaskID == "" {
		// The first message may have reached the agent, but its task id was never learnt:
		// sending it again could run the work twice.
		return backend.Result{}, backend.ErrNotResumable
	}
	e, ok := p.running.Register(run.ExecutionID())
	if !ok {
		return backend.Result{}, errors.New("A2A execution is already running")
	}
	defer p.running.Unregister(ctx, run.ExecutionID(), e)
	e.Started(cp.TaskID)
	if ctx.Err() != nil {
		// Resumed to be cancelled: the entry is all Cancel needs to cancel the task.
		return backend.Result{}, ctx.Err()
	}
	t, err := p.newTaskRun(run, e, cp)
	if err != nil {
		return backend.Result{}, err
	}
	return t.loop(ctx, outcome{follow: true})
}

// Cancel is the runtime's cleanup hook: CancelTask (0.3's tasks/cancel), bounded by ctx (the
// runtime's cancel timeout). Its error becomes providerCleanupError.
func (p *Provider) Cancel(ctx context.Context, executionID string, _ string) error {
	e := p.running.Take(executionID)
	if e == nil {
		return nil // never started here
	}
	var taskID a2a.TaskID
	select {
	case <-e.Known():
		taskID = e.Value()
	case <-ctx.Done():
		return errors.New(p.agent.message("cancel the task", ctx.Err()))
	}
	if taskID == "" {
		return nil // no task was created
	}
	_, _, client, ok := p.agent.current()
	if !ok {
		return errors.New("The A2A agent's card has not been read: the task could not be cancelled")
	}
	task, err := client.CancelTask(ctx, &a2a.CancelTaskRequest{ID: taskID})
	switch {
	case errors.Is(err, a2a.ErrTaskNotCancelable):
		return nil // it ended at the agent meanwhile
	case err != nil:
		return errors.New(p.agent.message("cancel the task", err))
	case task != nil && task.Status.State != a2a.TaskStateCanceled && !task.Status.State.Terminal():
		return errors.New("A2A agent " + p.agent.s.label + " did not confirm the cancellation (task " + string(task.Status.State) + ")")
	}
	return nil
}

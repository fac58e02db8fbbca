package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/harness-edge/harness-edge/backend"
)

// Provider serves one A2A agent. It implements backend.Provider, backend.Canceler and
// backend.Resumer.
type Provider struct {
	agent *Agent

	mu      sync.Mutex
	running map[string]*taskEntry // execution id → its task
}

var (
	_ backend.Provider = (*Provider)(nil)
	_ backend.Canceler = (*Provider)(nil)
	_ backend.Resumer  = (*Provider)(nil)
)

// Run sends the execution's input as the first message of a new A2A task and relays the task.
func (p *Provider) Run(ctx context.Context, run *backend.Run) (backend.Result, error) {
	e, ok := p.register(run.ExecutionID())
	if !ok {
		return backend.Result{}, errors.New("A2A execution is already running")
	}
	defer p.unregister(ctx, run.ExecutionID(), e)
	// The runtime cancels ctx before it calls Cancel: registering first and checking after
	// means a Cancel that found no entry is always followed by this check.
	if ctx.Err() != nil {
		e.started("")
		return backend.Result{}, ctx.Err()
	}
	t, err := p.newTaskRun(run, e, checkpoint{})
	if err != nil {
		e.started("")
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
	e, ok := p.register(run.ExecutionID())
	if !ok {
		return backend.Result{}, errors.New("A2A execution is already running")
	}
	defer p.unregister(ctx, run.ExecutionID(), e)
	e.started(cp.TaskID)
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

// Cancel is the runtime's cleanup hook: tasks/cancel, bounded by ctx (the runtime's cancel
// timeout). Its error becomes providerCleanupError.
func (p *Provider) Cancel(ctx context.Context, executionID string, _ string) error {
	p.mu.Lock()
	e := p.running[executionID]
	delete(p.running, executionID)
	p.mu.Unlock()
	if e == nil {
		return nil // never started here
	}
	var taskID a2a.TaskID
	select {
	case <-e.startDone:
		taskID = e.taskID
	case <-ctx.Done():
		return errors.New(p.agent.message("cancel the task", ctx.Err()))
	}
	if taskID == "" {
		return nil // no task was created
	}
	_, client, ok := p.agent.current()
	if !ok {
		return errors.New("The A2A agent's card has not been read: the task could not be cancelled")
	}
	task, err := client.CancelTask(ctx, &a2a.TaskIDParams{ID: taskID})
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

// taskEntry is a running execution's task, for Cancel.
type taskEntry struct {
	startDone chan struct{} // closed once taskID is known (or never will be)
	taskID    a2a.TaskID
	once      sync.Once
}

func (e *taskEntry) started(id a2a.TaskID) {
	e.once.Do(func() {
		e.taskID = id
		close(e.startDone)
	})
}

func (p *Provider) register(id string) (*taskEntry, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, running := p.running[id]; running {
		return nil, false
	}
	e := &taskEntry{startDone: make(chan struct{})}
	p.running[id] = e
	return e, true
}

// unregister forgets a run that ended, unless its context was cancelled: then the runtime's
// Cancel hook follows and needs the entry; it removes it.
func (p *Provider) unregister(ctx context.Context, id string, e *taskEntry) {
	e.started("") // a run that ends without a task never gets one
	if ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running[id] == e {
		delete(p.running, id)
	}
}

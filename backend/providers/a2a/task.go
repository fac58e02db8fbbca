package a2a

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/providers/internal/running"
	"github.com/harness-edge/harness-edge/backend/usage"
)

// taskRun relays one A2A task into one execution. It runs on the execution's goroutine only.
type taskRun struct {
	p      *Provider
	run    *backend.Run
	e      *running.Entry[a2a.TaskID]
	client *a2aclient.Client
	card   *a2a.AgentCard

	cp checkpoint
	// seenMessages and seenArtifacts are what this process relayed (or, after a restart, what
	// the checkpoint accounts for, learnt from the first snapshot).
	seenMessages  map[string]bool
	seenArtifacts map[a2a.ArtifactID]bool
	// output is the text relayed, the execution's final output; complete once synced.
	output strings.Builder
	synced bool
	// reportedUsage is the last usage the agent reported (usage.go); nil: none yet.
	reportedUsage *usage.Usage
}

// outcome is where a step left the task: ended (done: result or err), waiting for input
// (input: the input-required status, with the snapshot history that shows it when known), or
// to be followed by GetTask and SubscribeToTask (follow).
type outcome struct {
	done    bool
	result  backend.Result
	err     error
	input   *a2a.TaskStatus
	history []*a2a.Message
	follow  bool
}

func finished(result backend.Result, err error) outcome {
	return outcome{done: true, result: result, err: err}
}

func (p *Provider) newTaskRun(run *backend.Run, e *running.Entry[a2a.TaskID], cp checkpoint) (*taskRun, error) {
	card, _, client, ok := p.agent.current()
	if !ok {
		return nil, fmt.Errorf("A2A agent %s has not answered with its agent card since the edge started", p.agent.s.label)
	}
	return &taskRun{
		p: p, run: run, e: e, client: client, card: card, cp: cp,
		seenMessages:  map[string]bool{},
		seenArtifacts: map[a2a.ArtifactID]bool{},
		synced:        cp.Messages == 0 && cp.Parts == 0,
	}, nil
}

// start sends the execution's input as a new task's first message, in the conversation's
// context when it has one, and relays the task to its end.
func (t *taskRun) start(ctx context.Context) (backend.Result, error) {
	contextID, err := t.conversationContext()
	if err != nil {
		return backend.Result{}, err
	}
	t.cp.Sending = true
	if err := t.run.SaveCheckpoint(t.cp.encode()); err != nil {
		return backend.Result{}, err
	}
	msg := &a2a.Message{
		ID: firstMessageID(t.run.ExecutionID()), Role: a2a.MessageRoleUser, ContextID: contextID,
		Parts: a2a.ContentParts{a2a.NewTextPart(t.run.Input())},
	}
	return t.loop(ctx, t.send(ctx, msg))
}

// loop drives the task from o to its end: answering input-required, following the task when
// its stream is lost.
func (t *taskRun) loop(ctx context.Context, o outcome) (backend.Result, error) {
	for {
		switch {
		case o.done:
			return o.result, o.err
		case o.input != nil:
			o = t.answer(ctx, *o.input, o.history)
		default:
			o = t.follow(ctx)
		}
	}
}

// send sends msg and relays what follows: its streamed answer (SendStreamingMessage, 0.3's
// message/stream), or (an agent that does not stream) the task a non-blocking SendMessage
// (message/send) returns, followed by GetTask (tasks/get).
func (t *taskRun) send(ctx context.Context, msg *a2a.Message) outcome {
	req := &a2a.SendMessageRequest{Message: msg}
	if cfg := t.run.Config(); len(cfg) > 0 {
		req.Metadata = map[string]any{"harnessConfig": cfg}
	}
	if t.card.Capabilities.Streaming {
		return t.direct(ctx, func(streamCtx context.Context) iter.Seq2[a2a.Event, error] {
			return t.client.SendStreamingMessage(streamCtx, req)
		})
	}
	// Non-blocking: the task comes back at once and is followed by GetTask rather than by one
	// request held open for the whole task.
	req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	callCtx, cancel := t.p.agent.call(context.WithoutCancel(ctx))
	defer cancel()
	result, err := t.client.SendMessage(callCtx, req)
	ev, ok := result.(a2a.Event)
	switch {
	case err != nil && (t.cp.TaskID == "" || isRefusal(err)):
		return finished(backend.Result{}, errors.New(t.p.agent.message("take the message", err)))
	case err != nil || !ok:
		// An answer lost on the way: the task's history says whether it must be sent again.
		t.p.agent.log.Info("A2A SendMessage failed; following the task", "execution", t.run.ExecutionID(), "task", t.cp.TaskID, "error", err)
		return outcome{follow: true}
	}
	if o := t.onEvent(ctx, ev); o.done || o.input != nil {
		return o
	}
	return outcome{follow: true}
}

// direct relays a stream of events as they come. It ends with the task (done or waiting for
// input), or asks to follow the task when the stream ended early. The stream outlives ctx until
// the task id is known, so that a cancellation always knows which task to cancel.
func (t *taskRun) direct(ctx context.Context, open func(context.Context) iter.Seq2[a2a.Event, error]) outcome {
	streamCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go func() {
		select {
		case <-ctx.Done():
			select {
			case <-t.e.Known():
			case <-time.After(t.p.agent.s.requestTimeout):
			case <-streamCtx.Done():
			}
			stop()
		case <-streamCtx.Done():
		}
	}()
	var streamErr error
	for ev, err := range open(streamCtx) {
		if err != nil {
			streamErr = err
			break
		}
		if o := t.onEvent(ctx, ev); o.done || o.input != nil {
			return o
		}
		if ctx.Err() != nil && t.cp.TaskID != "" {
			return finished(backend.Result{}, ctx.Err())
		}
	}
	switch {
	case ctx.Err() != nil:
		return finished(backend.Result{}, ctx.Err())
	case streamErr != nil && (t.cp.TaskID == "" || isRefusal(streamErr)):
		// Refused (an A2A error, not a lost connection), or lost before any task existed.
		return finished(backend.Result{}, errors.New(t.p.agent.message("take the message", streamErr)))
	case t.cp.TaskID == "":
		return finished(backend.Result{}, fmt.Errorf("A2A agent %s ended its stream without a task or a reply", t.p.agent.s.label))
	}
	t.p.agent.log.Info("A2A stream ended before the task did; following the task", "execution", t.run.ExecutionID(), "task", t.cp.TaskID, "error", streamErr)
	return outcome{follow: true}
}

// follow relays the task from snapshots (GetTask, 0.3's tasks/get, with the whole history)
// until it ends or asks for input. Events of a SubscribeToTask stream (0.3's tasks/resubscribe;
// agents that stream) only say when to look again: a snapshot is relayed in the order the task keeps, so nothing missed while no stream
// was open is lost or reordered. Polling every poll interval covers agents that do not stream
// and the moments between two streams.
func (t *taskRun) follow(ctx context.Context) outcome {
	s := t.p.agent.s
	wake := make(chan struct{}, 1)
	subCtx, stopSub := context.WithCancel(ctx)
	defer stopSub()
	if t.card.Capabilities.Streaming {
		go t.resubscribe(subCtx, t.cp.TaskID, wake)
	}
	ticker := time.NewTicker(s.pollInterval)
	defer ticker.Stop()
	lastContact := time.Now()
	for {
		callCtx, cancel := t.p.agent.call(ctx)
		task, err := t.client.GetTask(callCtx, &a2a.GetTaskRequest{ID: t.cp.TaskID, HistoryLength: new(math.MaxInt32)})
		cancel()
		switch {
		case err == nil:
			lastContact = time.Now()
			if o := t.applySnapshot(ctx, task); o.done || o.input != nil {
				return o
			}
		case ctx.Err() != nil:
			return finished(backend.Result{}, ctx.Err())
		case errors.Is(err, a2a.ErrTaskNotFound):
			return finished(backend.Result{}, fmt.Errorf("A2A agent %s no longer knows task %s", s.label, t.cp.TaskID))
		case time.Since(lastContact) > s.goneTimeout:
			return finished(backend.Result{}, fmt.Errorf("A2A agent %s was unreachable for longer than %s", s.label, s.goneTimeout))
		}
		select {
		case <-ctx.Done():
			return finished(backend.Result{}, ctx.Err())
		case <-wake:
		case <-ticker.C:
		}
	}
}

// resubscribe keeps a SubscribeToTask stream open (reopening it after the poll interval when it
// ends) and signals wake at each event.
func (t *taskRun) resubscribe(ctx context.Context, taskID a2a.TaskID, wake chan<- struct{}) {
	for ctx.Err() == nil {
		for _, err := range t.client.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: taskID}) {
			if err != nil {
				break
			}
			select {
			case wake <- struct{}{}:
			default:
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(t.p.agent.s.pollInterval):
		}
	}
}

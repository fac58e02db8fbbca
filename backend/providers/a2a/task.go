package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/providers/internal/running"
	"github.com/harness-edge/harness-edge/sdk/api"
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
}

// outcome is where a step left the task: ended (done: result or err), waiting for input
// (input: the input-required status, with the snapshot history that shows it when known), or
// to be followed by tasks/get and tasks/resubscribe (follow).
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
	card, client, ok := p.agent.current()
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
		Parts: a2a.ContentParts{a2a.TextPart{Text: t.run.Input()}},
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

// send sends msg and relays what follows: its message/stream, or (an agent that does not
// stream) the task message/send returns, followed by tasks/get.
func (t *taskRun) send(ctx context.Context, msg *a2a.Message) outcome {
	params := &a2a.MessageSendParams{Message: msg}
	if cfg := t.run.Config(); len(cfg) > 0 {
		params.Metadata = map[string]any{"harnessConfig": cfg}
	}
	if t.card.Capabilities.Streaming {
		return t.direct(ctx, func(streamCtx context.Context) iter.Seq2[a2a.Event, error] {
			return t.client.SendStreamingMessage(streamCtx, params)
		})
	}
	callCtx, cancel := t.p.agent.call(context.WithoutCancel(ctx))
	defer cancel()
	result, err := t.client.SendMessage(callCtx, params)
	ev, ok := result.(a2a.Event)
	switch {
	case err != nil && (t.cp.TaskID == "" || isRefusal(err)):
		return finished(backend.Result{}, errors.New(t.p.agent.message("take the message", err)))
	case err != nil || !ok:
		// An answer lost on the way: the task's history says whether it must be sent again.
		t.p.agent.log.Info("A2A message/send failed; following the task", "execution", t.run.ExecutionID(), "task", t.cp.TaskID, "error", err)
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

// follow relays the task from snapshots (tasks/get with the whole history) until it ends or asks
// for input. Events of a tasks/resubscribe stream (agents that stream) only say when to look
// again: a snapshot is relayed in the order the task keeps, so nothing missed while no stream
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
		task, err := t.client.GetTask(callCtx, &a2a.TaskQueryParams{ID: t.cp.TaskID, HistoryLength: new(math.MaxInt32)})
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

// resubscribe keeps a tasks/resubscribe stream open (reopening it after the poll interval when
// it ends) and signals wake at each event.
func (t *taskRun) resubscribe(ctx context.Context, taskID a2a.TaskID, wake chan<- struct{}) {
	for ctx.Err() == nil {
		for _, err := range t.client.ResubscribeToTask(ctx, &a2a.TaskIDParams{ID: taskID}) {
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

// onEvent relays one streamed event.
func (t *taskRun) onEvent(ctx context.Context, ev a2a.Event) outcome {
	switch e := ev.(type) {
	case *a2a.Task:
		return t.applySnapshot(ctx, e)
	case *a2a.TaskStatusUpdateEvent:
		if err := t.learnTask(e.TaskID, e.ContextID); err != nil {
			return finished(backend.Result{}, err)
		}
		if m := e.Status.Message; m != nil && m.Role == a2a.MessageRoleAgent && !t.seenMessages[m.ID] {
			if silentState(e.Status.State) {
				t.consume(m)
			} else if err := t.relayMessage(m, 0); err != nil {
				return finished(backend.Result{}, err)
			}
		}
		return t.onStatus(ctx, e.Status, nil)
	case *a2a.TaskArtifactUpdateEvent:
		if err := t.learnTask(e.TaskID, e.ContextID); err != nil {
			return finished(backend.Result{}, err)
		}
		if e.Artifact != nil && !t.seenArtifacts[e.Artifact.ID] {
			if err := t.announceArtifact(e.Artifact); err != nil {
				return finished(backend.Result{}, err)
			}
		}
	case *a2a.Message:
		// A reply without a task (the agent answered at once): it is the whole execution.
		if m := e; m.Role == a2a.MessageRoleAgent && !t.seenMessages[m.ID] {
			t.seenMessages[m.ID] = true
			for _, part := range m.Parts {
				if err := emitPart(t.run, m, part); err != nil {
					return finished(backend.Result{}, err)
				}
			}
			t.output.WriteString(messageText(m))
		}
		if t.cp.TaskID == "" {
			t.e.Started("")
			return finished(backend.Result{FinalOutput: t.output.String()}, nil)
		}
	}
	return outcome{}
}

// applySnapshot relays what a task snapshot holds beyond the checkpoint: its agent messages
// (history, plus a status message not in history) and its artifacts, then acts on its state.
func (t *taskRun) applySnapshot(ctx context.Context, task *a2a.Task) outcome {
	if err := t.learnTask(task.ID, task.ContextID); err != nil {
		return finished(backend.Result{}, err)
	}
	msgs := agentMessages(task)
	for i, m := range msgs {
		switch {
		case i < t.cp.Messages || (i == t.cp.Messages && t.cp.Parts > 0 && !t.synced):
			// Relayed before a restart: learn it (and, for the message cut half-way, its
			// relayed parts' text) for the final output.
			if !t.synced {
				t.seenMessages[m.ID] = true
				if !slices.Contains(t.cp.Silent, m.ID) {
					t.output.WriteString(messageTextUpTo(m, i, t.cp))
				}
			}
			if i < t.cp.Messages {
				continue
			}
			if err := t.relayMessage(m, t.cp.Parts); err != nil {
				return finished(backend.Result{}, err)
			}
		case t.seenMessages[m.ID]:
			t.cp.Messages, t.cp.Parts = i+1, 0 // relayed from the stream already
		case task.Status.Message != nil && m.ID == task.Status.Message.ID && silentState(task.Status.State):
			t.consume(m)
		default:
			if err := t.relayMessage(m, 0); err != nil {
				return finished(backend.Result{}, err)
			}
		}
	}
	t.synced = true
	for i, a := range task.Artifacts {
		switch {
		case i < t.cp.Artifacts:
			t.seenArtifacts[a.ID] = true
		case t.seenArtifacts[a.ID]:
			t.cp.Artifacts = i + 1
		default:
			if err := t.announceArtifact(a); err != nil {
				return finished(backend.Result{}, err)
			}
		}
	}
	return t.onStatus(ctx, task.Status, task.History)
}

// agentMessages are the agent's messages of a task in the order the agent sent them: its
// history, and its status message when the agent keeps that out of history.
func agentMessages(task *a2a.Task) []*a2a.Message {
	var out []*a2a.Message
	ids := map[string]bool{}
	for _, m := range task.History {
		if m != nil && m.Role == a2a.MessageRoleAgent {
			out = append(out, m)
			ids[m.ID] = true
		}
	}
	if m := task.Status.Message; m != nil && m.Role == a2a.MessageRoleAgent && !ids[m.ID] {
		out = append(out, m)
	}
	return out
}

// messageTextUpTo is the text of message i that the checkpoint says was relayed.
func messageTextUpTo(m *a2a.Message, i int, cp checkpoint) string {
	if i < cp.Messages {
		return messageText(m)
	}
	return messageText(&a2a.Message{Parts: m.Parts[:min(cp.Parts, len(m.Parts))]})
}

// relayMessage relays an agent message from part `from` on, each emission committing the
// checkpoint that counts it.
func (t *taskRun) relayMessage(m *a2a.Message, from int) error {
	t.seenMessages[m.ID] = true
	for i := from; i < len(m.Parts); i++ {
		next := t.cp
		if i == len(m.Parts)-1 {
			next.Messages, next.Parts = next.Messages+1, 0
		} else {
			next.Parts = i + 1
		}
		if err := emitPart(t.run.WithCheckpoint(next.encode()), m, m.Parts[i]); err != nil {
			return err
		}
		if p, ok := m.Parts[i].(a2a.TextPart); ok {
			t.output.WriteString(p.Text)
		}
		t.cp = next
	}
	if from >= len(m.Parts) {
		t.cp.Messages, t.cp.Parts = t.cp.Messages+1, 0 // nothing to emit: counted with the next
	}
	return nil
}

// silentState reports the states whose status message is not relayed as output: it becomes the
// action's question (input-required) or the execution's error message.
func silentState(s a2a.TaskState) bool {
	switch s {
	case a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired, a2a.TaskStateFailed,
		a2a.TaskStateRejected, a2a.TaskStateCanceled:
		return true
	}
	return false
}

// consume counts a status message as relayed without emitting it (see silentState); the
// checkpoint that counts it is committed with the next emission (the action's, for a question).
func (t *taskRun) consume(m *a2a.Message) {
	t.seenMessages[m.ID] = true
	t.cp.Messages, t.cp.Parts = t.cp.Messages+1, 0
	t.cp.Silent = append(t.cp.Silent, m.ID)
}

func (t *taskRun) announceArtifact(a *a2a.Artifact) error {
	t.seenArtifacts[a.ID] = true
	next := t.cp
	next.Artifacts++
	if err := t.run.WithCheckpoint(next.encode()).EmitArtifact(artifactDescriptor(t.cp.TaskID, a)); err != nil {
		return err
	}
	t.cp = next
	return nil
}

// learnTask records the task (and the conversation's context) the first time they are seen.
func (t *taskRun) learnTask(taskID a2a.TaskID, contextID string) error {
	if t.cp.TaskID != "" || taskID == "" {
		return nil
	}
	t.cp.TaskID, t.cp.ContextID, t.cp.Sending = taskID, contextID, false
	// The task's ids are the execution's first event, so that callers can find the task at
	// the agent; it commits the checkpoint that names the task.
	if err := t.run.WithCheckpoint(t.cp.encode()).Emit(api.StandardEventTypeProviderEvent, api.JSONObject{
		"type": "a2a.task", "taskId": string(taskID), "contextId": contextID,
	}); err != nil {
		return err
	}
	t.e.Started(taskID)
	return t.saveConversationContext(contextID)
}

// onStatus acts on a task state: the terminal ones end the execution, input-required asks the
// caller, auth-required fails (the edge carries no per-task credentials; see docs/a2a.md).
func (t *taskRun) onStatus(ctx context.Context, s a2a.TaskStatus, history []*a2a.Message) outcome {
	label := t.p.agent.s.label
	detail := func() string {
		if text := messageText(s.Message); text != "" {
			return ": " + text
		}
		return ""
	}
	switch s.State {
	case a2a.TaskStateCompleted:
		return finished(backend.Result{FinalOutput: t.output.String()}, nil)
	case a2a.TaskStateFailed:
		return finished(backend.Result{}, fmt.Errorf("A2A agent %s failed the task%s", label, detail()))
	case a2a.TaskStateRejected:
		return finished(backend.Result{}, fmt.Errorf("A2A agent %s rejected the task%s", label, detail()))
	case a2a.TaskStateCanceled:
		if ctx.Err() != nil {
			return finished(backend.Result{}, ctx.Err())
		}
		return finished(backend.Result{}, fmt.Errorf("A2A agent %s cancelled the task%s", label, detail()))
	case a2a.TaskStateAuthRequired:
		t.cancelTask()
		return finished(backend.Result{}, fmt.Errorf("A2A agent %s asked for authentication (auth-required), which the edge does not carry for a task; configure the agent's credentials on the provider (bearer_token, header)%s", label, detail()))
	case a2a.TaskStateInputRequired:
		if questionKey(s) != t.cp.AnsweredQuestion {
			return outcome{input: &s, history: history} // a new question
		}
		// The question answered last: the agent may not have moved on yet. Only a snapshot's
		// history says whether the answer reached it; without one, look again.
		if history != nil && !t.answerDelivered(history) {
			return outcome{input: &s, history: history} // recorded, never sent: send it
		}
	}
	return outcome{} // submitted, working, unknown, or an input-required already answered
}

// answer asks the caller for the input the agent wants (or takes the answer a restart left
// pending or unsent), then sends it as the task's next message and relays what follows.
func (t *taskRun) answer(ctx context.Context, s a2a.TaskStatus, history []*a2a.Message) outcome {
	key := questionKey(s)
	if t.cp.Answer == nil || t.cp.AnsweredQuestion != key {
		actionID := ""
		if pending, ok := t.run.PendingAction(); ok {
			actionID = pending.ID // asked before a restart
		} else {
			description := messageText(s.Message)
			req, err := t.run.WithCheckpoint(t.cp.encode()).OpenAction(backend.ActionInput{
				Kind:        api.ActionKindInput,
				Title:       "Input requested by " + t.agentName(),
				Description: nonEmpty(description),
				Payload: api.JSONObject{
					"a2aTaskId": string(t.cp.TaskID), "a2aContextId": t.cp.ContextID, "question": description,
				},
			})
			if err != nil {
				return finished(backend.Result{}, err)
			}
			actionID = req.ID
		}
		response, err := t.run.AwaitAction(ctx, actionID)
		if err != nil {
			return finished(backend.Result{}, err)
		}
		t.cp.Round++
		t.cp.Answer, t.cp.AnsweredQuestion = &response, key
		if err := t.run.SaveCheckpoint(t.cp.encode()); err != nil {
			return finished(backend.Result{}, err)
		}
	}
	response := *t.cp.Answer
	if response.Approved != nil && !*response.Approved {
		t.cancelTask()
		return finished(backend.Result{}, fmt.Errorf("The input requested by A2A agent %s was declined", t.p.agent.s.label))
	}
	if t.answerDelivered(history) {
		return outcome{follow: true} // sent before a restart; the agent has it
	}
	return t.send(ctx, &a2a.Message{
		ID: answerMessageID(t.run.ExecutionID(), t.cp.Round), Role: a2a.MessageRoleUser,
		TaskID: t.cp.TaskID, ContextID: t.cp.ContextID, Parts: answerParts(response),
	})
}

// answerDelivered reports whether a task's history holds the last answer taken.
func (t *taskRun) answerDelivered(history []*a2a.Message) bool {
	if t.cp.Round == 0 {
		return false
	}
	id := answerMessageID(t.run.ExecutionID(), t.cp.Round)
	return slices.ContainsFunc(history, func(m *a2a.Message) bool { return m != nil && m.ID == id })
}

// cancelTask asks the agent to cancel the task, best effort (the execution fails anyway).
func (t *taskRun) cancelTask() {
	ctx, cancel := t.p.agent.call(context.Background())
	defer cancel()
	if _, err := t.client.CancelTask(ctx, &a2a.TaskIDParams{ID: t.cp.TaskID}); err != nil {
		t.p.agent.log.Info("cancel an A2A task", "execution", t.run.ExecutionID(), "task", t.cp.TaskID, "error", err)
	}
}

func (t *taskRun) agentName() string {
	if t.card.Name != "" {
		return t.card.Name
	}
	return "A2A agent " + t.p.agent.s.label
}

// conversationContext is the A2A contextId of the execution's conversation, if it has one.
func (t *taskRun) conversationContext() (string, error) {
	raw, found, err := t.run.LoadState(t.contextKey())
	if err != nil || !found {
		return "", err
	}
	return string(raw), nil
}

func (t *taskRun) saveConversationContext(contextID string) error {
	if contextID == "" {
		return nil
	}
	if current, err := t.conversationContext(); err != nil || current == contextID {
		return err
	}
	return t.run.SaveState(t.contextKey(), []byte(contextID))
}

// contextKey names the conversation's context per agent: the same local conversation talks to
// each agent in a context of that agent's.
func (t *taskRun) contextKey() string {
	return "context\x00" + t.p.agent.s.cardURL + "\x00" + t.run.ConversationID()
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func jsonText(v any) (string, error) {
	raw, err := json.Marshal(v)
	return string(raw), err
}

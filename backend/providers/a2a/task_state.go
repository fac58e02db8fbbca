package a2a

import (
	"context"
	"fmt"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// What the agent says about the task: stream events and snapshots (GetTask) become the
// execution's events, each relayed once.

// onEvent relays one streamed event.
func (t *taskRun) onEvent(ctx context.Context, ev a2a.Event) outcome {
	if err := t.reportUsage(ev); err != nil {
		return finished(backend.Result{}, err)
	}
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
	if err := t.reportUsage(task); err != nil {
		return finished(backend.Result{}, err)
	}
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
		if p := m.Parts[i]; p != nil {
			t.output.WriteString(p.Text())
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

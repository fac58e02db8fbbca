package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// What the execution says to the agent: an action's answer as the task's next message, a
// cancellation, and the conversation's A2A context kept across executions.

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
	// A declined input (approved:false, or decision reject — a person's, or the action's
	// expiry) cancels the task: A2A has no message that declines. The reason goes into the
	// execution's error.
	if response.Approved != nil && !*response.Approved {
		t.cancelTask()
		reason := ""
		if response.Message != nil {
			reason = ": " + *response.Message
		}
		return finished(backend.Result{}, fmt.Errorf("The input requested by A2A agent %s was declined%s", t.p.agent.s.label, reason))
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
	if _, err := t.client.CancelTask(ctx, &a2a.CancelTaskRequest{ID: t.cp.TaskID}); err != nil {
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

package a2a_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// A2A input-required through the provider, answered with typed decisions: respond sends its
// value as the task's next message; reject cancels the task and fails the execution with the
// answer's message; a decision an input cannot take is refused (400) and the input stays
// pending; an input nobody answers in time is answered reject by the actor expiry, and fails
// closed the same way.
func (s *suite) typedAnswersToInput(t *testing.T) {
	respond, reject, approve := api.DecisionRespond, api.DecisionReject, api.DecisionApprove
	ada := api.JSONValue("Ada")
	message := "names stay private"
	t.Run("respond", func(t *testing.T) {
		res, _ := s.run(t, "ask", func(req api.ActionRequest) (api.ActionResponse, error) {
			// A decision an input cannot take: refused, and the input still waits.
			_, err := s.client.RespondToAction(wait(t), req.ExecutionID, req.ID, api.ActionResponse{Decision: &approve})
			if !errors.Is(err, sdk.ErrValidation) {
				t.Errorf("an approval of an input: %v, want VALIDATION_ERROR", err)
			}
			if exec, err := s.client.GetExecution(wait(t), req.ExecutionID); err != nil || exec.State != api.ExecutionStateAwaitingInput {
				t.Errorf("after the refused answer: %s %v", exec.State, err)
			}
			return api.ActionResponse{Decision: &respond, Value: &ada}, nil
		})
		if !res.Succeeded() || res.Output != "Hello, Ada!" {
			t.Fatalf("result = %s %q", res.Execution.State, res.Output)
		}
	})
	t.Run("reject", func(t *testing.T) {
		res, _ := s.run(t, "ask", func(api.ActionRequest) (api.ActionResponse, error) {
			return api.ActionResponse{Decision: &reject, Message: &message}, nil
		})
		s.requireDeclined(t, res.Execution, ": "+message)
	})
	t.Run("expiry", func(t *testing.T) {
		seconds := 1
		_, err := s.client.Run(wait(t), api.StartExecutionRequest{ConversationID: s.newConversation(t), ProviderID: "agent",
			Input: "ask", ActionTimeoutSeconds: &seconds}, sdk.RunHandlers{})
		var pending *sdk.ActionRequiredError
		if !errors.As(err, &pending) || pending.Action.ExpiresAt == nil {
			t.Fatalf("Run without a handler: %v, want the pending input with its expiresAt", err)
		}
		exec, err := s.client.WaitForTerminal(wait(t), pending.Execution.ID)
		if err != nil {
			t.Fatal(err)
		}
		s.requireDeclined(t, exec, ": No answer before the action expired at "+*pending.Action.ExpiresAt)
		var responded api.ActionRespondedData
		for _, e := range s.events(t, exec.ID) {
			if e.Type == api.StandardEventTypeActionResponded {
				responded = typed(e.Data.AsActionRespondedData())
			}
		}
		if responded.Actor == nil || responded.Actor.Kind == nil || *responded.Actor.Kind != api.ActorKindExpiry ||
			responded.Decision == nil || *responded.Decision != api.DecisionReject {
			t.Fatalf("action.responded = %+v, want a reject by the actor expiry", responded)
		}
	})
}

// requireDeclined: the execution failed naming the declined input (and why), and the agent's
// task was cancelled.
func (s *suite) requireDeclined(t *testing.T, exec api.Execution, reason string) {
	t.Helper()
	if exec.State != api.ExecutionStateFailed || exec.Error == nil || !strings.HasSuffix(exec.Error.Message, "was declined"+reason) {
		t.Fatalf("execution = %s %+v, want declined%s", exec.State, exec.Error, reason)
	}
	if got := s.agent.TaskState(t, taskEvent(t, s.events(t, exec.ID))["taskId"].(string)); got != a2a.TaskStateCanceled {
		t.Fatalf("agent's task = %s, want canceled", got)
	}
}

// typed unwraps an event's typed data (AsActionRespondedData, …); data that does not decode as
// its type means a broken server or test.
func typed[T any](data T, err error) T {
	if err != nil {
		panic(err)
	}
	return data
}

package a2a_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// The agent's stream is cut mid-task twice — the first time with the agent out of reach for a
// while, so that what it sends meanwhile reaches no stream at all: the edge follows the task
// with SubscribeToTask and GetTask (0.3's tasks/resubscribe and tasks/get) and relays every
// message once, in order, and the SDK's stream from the edge sees each once too.
func (s *suite) cutAgentStreamIsResumedExactlyOnce(t *testing.T) {
	cut, e := s.cut, s.edge
	cut.mu.Lock()
	cutsBefore := cut.cuts
	cut.mu.Unlock()

	const ticks = 40
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exec, err := e.client.StartExecution(ctx, api.StartExecutionRequest{
		ConversationID: e.newConversation(t), ProviderID: "agent", Input: fmt.Sprintf("slow %d 30", ticks),
	})
	if err != nil {
		t.Fatal(err)
	}
	var streamed []string
	var acceptsAfterCut int
	for ev, err := range e.client.Events(ctx, exec.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type != api.StandardEventTypeOutputTextDelta {
			continue
		}
		d, _ := ev.Data.AsTextDeltaData()
		streamed = append(streamed, d.Text)
		switch len(streamed) {
		case 5:
			cut.setRefusing(true)
			cut.cut()
			cut.mu.Lock()
			acceptsAfterCut = cut.accepts
			cut.mu.Unlock()
			time.Sleep(300 * time.Millisecond) // ~10 ticks reach no stream
			cut.setRefusing(false)
		case 20:
			cut.cut() // this time the resubscribed stream
		}
	}
	var want []string
	for i := 1; i <= ticks; i++ {
		want = append(want, fmt.Sprintf("tick %d", i)+map[bool]string{true: "\n"}[i < ticks])
	}
	if !slices.Equal(streamed, want) {
		t.Fatalf("SDK stream deltas = %q\nwant %q", streamed, want)
	}
	final, err := e.client.GetExecution(ctx, exec.ID)
	if err != nil || final.State != api.ExecutionStateSucceeded || *final.FinalOutput != strings.Join(want, "") {
		t.Fatalf("execution = %+v, %v", final, err)
	}
	if got := deltaTexts(e.events(t, exec.ID)); !slices.Equal(got, want) {
		t.Fatalf("stored deltas = %q", got)
	}
	cut.mu.Lock()
	defer cut.mu.Unlock()
	if cut.cuts-cutsBefore < 2 || cut.accepts <= acceptsAfterCut {
		t.Fatalf("cuts = %d, connections after the first cut = %d: the stream was not cut and resumed", cut.cuts-cutsBefore, cut.accepts-acceptsAfterCut)
	}
}

// The agent is out of reach when the answer to its question is sent: the answer, recorded
// first, is sent again once the agent answers tasks/get and its history shows it never arrived —
// and only once.
func (s *suite) answerSentAgainWhenTheAgentWasOutOfReach(t *testing.T) {
	cut, e, agent := s.cut, s.edge, s.agent

	res, streamed := e.run(t, "ask", func(api.ActionRequest) (api.ActionResponse, error) {
		cut.setRefusing(true)
		cut.cut()
		go func() {
			time.Sleep(300 * time.Millisecond)
			cut.setRefusing(false)
		}()
		var v api.JSONValue = "Ada"
		return api.ActionResponse{Value: &v}, nil
	})
	if !res.Succeeded() || res.Output != "Hello, Ada!" || !slices.Equal(streamed, []string{"Hello, Ada!"}) {
		t.Fatalf("result = %s %q, streamed %q", res.Execution.State, res.Output, streamed)
	}
	task := agent.Task(t, taskEvent(t, e.events(t, res.Execution.ID))["taskId"].(string))
	var answers []string
	for _, m := range task.History {
		if m.Role == a2a.MessageRoleUser && strings.Contains(m.ID, "-answer-") {
			answers = append(answers, m.ID)
		}
	}
	if len(answers) != 1 || !strings.HasSuffix(answers[0], "-answer-1") {
		t.Fatalf("answers the agent got = %v, want one", answers)
	}
}

package acp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The agent's order survives the SDK's goroutines: every session/update the agent sent before a
// permission request is recorded before that request's action.required (ordering.go). The
// "updates-then-permission" fixture writes its updates and the request in one write, so they
// reach the SDK back to back.

// agentOrderWant is what the events up to the first action.required must say (agentOrder) when
// the fixture sent updates session/updates before its permission request: updates-1 text chunks
// "u1 ", "u2 ", …, each with its delta, then the tool call.
func agentOrderWant(updates int) []string {
	var want []string
	for i := 1; i < updates; i++ {
		want = append(want, "update agent_message_chunk", fmt.Sprintf("delta %q", fmt.Sprintf("u%d ", i)))
	}
	return append(want, "update tool_call", "action.required")
}

// agentOrder describes the events up to the first action.required: one entry per session/update
// provider.event (with its kind), per text delta (with its text), and the action.required.
func agentOrder(events []api.RuntimeEvent) []string {
	var order []string
	for _, e := range events {
		switch e.Type {
		case api.StandardEventTypeProviderEvent:
			data := typed(e.Data.AsProviderEventData())
			if data["method"] != "session/update" {
				continue
			}
			params, _ := data["params"].(map[string]any)
			update, _ := params["update"].(map[string]any)
			order = append(order, fmt.Sprintf("update %v", update["sessionUpdate"]))
		case api.StandardEventTypeOutputTextDelta:
			order = append(order, fmt.Sprintf("delta %q", typed(e.Data.AsTextDeltaData()).Text))
		case api.StandardEventTypeActionRequired:
			return append(order, "action.required")
		}
	}
	return order
}

// The race made certain: the first update is held on the SDK's notification goroutine until
// either the action.required of the request behind it has been recorded (the request overtook
// it: the bug) or that request is seen waiting for it (ordering.go: the fix). Before the fix the
// first always happened, so this test failed every time, not one run in many.
func TestActionRequiredWaitsForTheUpdatesBeforeIt(t *testing.T) {
	h := newHarness(t, "updates-then-permission", nil)
	actionRecorded := make(chan struct{})
	requestWaiting := make(chan struct{})
	var holdFirst, sawAction, sawWait sync.Once
	h.provider.observe.onAwaitUpdates = func(string) { sawWait.Do(func() { close(requestWaiting) }) }
	h.provider.observe.onUpdate = func(string) {
		holdFirst.Do(func() {
			select {
			case <-actionRecorded:
			case <-requestWaiting:
			case <-time.After(time.Minute): // only a hang guard: one of the two always happens
				t.Error("the permission request neither overtook the held update nor waited for it")
			}
		})
	}

	id := h.start("edit the file", nil)
	events := h.follow(id, func(e api.RuntimeEvent) {
		if e.Type == api.StandardEventTypeActionRequired {
			sawAction.Do(func() { close(actionRecorded) })
			h.respond(id, typed(e.Data.AsActionRequest()).ID, api.ActionResponse{Approved: approved(true)})
		}
	})
	exec := h.execution(id)
	requireTerminal(t, exec, events, api.ExecutionStateSucceeded)
	if got, want := agentOrder(events), agentOrderWant(2); !slices.Equal(got, want) {
		t.Fatalf("events up to action.required = %q\nwant the agent's order %q; events:%s", got, want, describe(events))
	}
	if *exec.FinalOutput != "u1 selected:allow-once" {
		t.Fatalf("final output = %q", *exec.FinalOutput)
	}
	h.assertWarm(id)
}

// Without any help for the race: many executions, several at a time, each with several updates
// right before its permission request, keep the agent's order every time.
func TestUpdatesBeforeAPermissionKeepTheirOrderInEveryExecution(t *testing.T) {
	const executions, parallel, updates = 200, 4, 6
	h := newHarness(t, "updates-then-permission", func(c *Config) { c.Env["ACP_FIXTURE_UPDATES"] = fmt.Sprint(updates) })
	want := agentOrderWant(updates)

	var mu sync.Mutex
	var problems []string
	next := make(chan int)
	var workers sync.WaitGroup
	for range parallel {
		workers.Go(func() {
			for i := range next {
				got, err := runOrderedExecution(h.rt, h.provider.Manifest().ID)
				if err == nil && !slices.Equal(got, want) {
					err = fmt.Errorf("events up to action.required = %q", got)
				}
				if err != nil {
					mu.Lock()
					problems = append(problems, fmt.Sprintf("execution %d: %v", i, err))
					mu.Unlock()
				}
			}
		})
	}
	for i := range executions {
		next <- i
	}
	close(next)
	workers.Wait()
	if len(problems) > 0 {
		t.Fatalf("%d of %d executions lost the agent's order (want %q):\n%s", len(problems), executions, want,
			problems[:min(len(problems), 5)])
	}
}

// runOrderedExecution runs one execution to its end, approving its action, and returns
// agentOrder of its events. It reports problems as errors: it runs on a worker goroutine.
func runOrderedExecution(rt *backend.Runtime, providerID string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conv, err := rt.CreateConversation(ctx, nil)
	if err != nil {
		return nil, err
	}
	exec, _, err := rt.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: providerID, Input: "go"})
	if err != nil {
		return nil, err
	}
	var events []api.RuntimeEvent
	for stored, err := range backend.FollowExecution(ctx, rt, exec.ID, 0) {
		if err != nil {
			return nil, err
		}
		event, err := stored.Decode()
		if err != nil {
			return nil, err
		}
		events = append(events, event)
		if event.Type == api.StandardEventTypeActionRequired {
			_, err := rt.RespondToAction(ctx, exec.ID, typed(event.Data.AsActionRequest()).ID,
				func() (api.ActionResponse, error) { return api.ActionResponse{Approved: approved(true)}, nil })
			if err != nil {
				return nil, err
			}
		}
	}
	if done, err := rt.GetExecution(ctx, exec.ID); err != nil || done.State != api.ExecutionStateSucceeded {
		return nil, errors.Join(err, fmt.Errorf("execution ended %s:%s", done.State, describe(events)))
	}
	return agentOrder(events), nil
}

// A session/update sent with an id is a request the client does not offer: it is answered
// "method not found" and recorded nowhere (the handler, which gets no id, would have taken it
// for a notification and thrown updateOrder's count off).
func TestSessionUpdateSentAsARequestIsRefused(t *testing.T) {
	h := newHarness(t, "update-as-request", nil)
	exec, events := h.run("hello", nil)
	requireTerminal(t, exec, events, api.ExecutionStateSucceeded)
	if *exec.FinalOutput != "ACP fixture" {
		t.Fatalf("final output = %q, want only the notification's text", *exec.FinalOutput)
	}
	if got := agentOrder(events); !slices.Equal(got, []string{"update agent_message_chunk", `delta "ACP fixture"`}) {
		t.Fatalf("recorded updates = %q", got)
	}
	answered := false
	for _, line := range h.wireLines() {
		if strings.Contains(line, `"id":"as-request"`) && strings.Contains(line, `"code":-32601`) {
			answered = true
		}
	}
	if !answered {
		t.Fatalf("no method-not-found answer on the wire: %v", h.wireLines())
	}
	h.assertWarm(exec.ID)
}

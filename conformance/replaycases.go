package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The HTTP cases of replaying a finished execution's events (SSE and JSON, from a cursor, past the
// end), cancelling it, and a stream cut short.

type finishedExecution struct {
	id     string
	state  api.ExecutionState
	events []api.RuntimeEvent
}

// finishedExecution runs one execution to its end, once, for the replay cases.
func (c *cases) finishedExecution(ctx context.Context) (*finishedExecution, error) {
	if c.finished != nil || c.finishedErr != nil {
		return c.finished, c.finishedErr
	}
	c.finished, c.finishedErr = func() (*finishedExecution, error) {
		conv, err := c.conversation(ctx)
		if err != nil {
			return nil, err
		}
		exec, err := c.s.sdk.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv, ProviderID: c.s.opts.ProviderID, Input: "hello runtime"})
		if err != nil {
			return nil, err
		}
		c.s.track(exec.ID)
		final, err := c.waitTerminal(ctx, exec.ID)
		if err != nil {
			return nil, err
		}
		events, err := c.s.replay(ctx, exec.ID, 0)
		if err != nil {
			return nil, err
		}
		if len(events) < 3 {
			return nil, fmt.Errorf("execution %s ended with %d events", exec.ID, len(events))
		}
		return &finishedExecution{id: exec.ID, state: final.State, events: events}, nil
	}()
	if c.finishedErr != nil {
		c.finishedErr = fmt.Errorf("running an execution to replay: %w", c.finishedErr)
	}
	return c.finished, c.finishedErr
}

// waitTerminal follows the raw event stream to its end and returns the final snapshot. (The
// SDK's WaitForTerminal would refuse a stream with a gap; here the gap is another check's
// business.)
func (c *cases) waitTerminal(ctx context.Context, id string) (api.Execution, error) {
	if _, err := c.s.collect(ctx, id, Scenario{}); err != nil {
		return api.Execution{}, err
	}
	return c.s.sdk.GetExecution(ctx, id)
}

// readStream reads a whole SSE response after the cursor; it fails if the server does not
// close the stream after the terminal event (the context ends first).
func (c *cases) readStream(ctx context.Context, id string, after int64) ([]sseMessage, error) {
	st, err := c.s.raw.openStream(ctx, id, after)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var msgs []sseMessage
	for m, err := range st.messages {
		if err != nil {
			if ctx.Err() != nil && len(msgs) > 0 && sdk.IsTerminalEvent(msgs[len(msgs)-1].Event.Type) {
				return msgs, errors.New("the server kept the stream open after the terminal event")
			}
			return msgs, err
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// eventList is the raw JSON replay: status 200 and an EventList whose events is an array.
func (c *cases) eventList(ctx context.Context, id string, after int64) (api.EventList, error) {
	r, err := c.s.raw.do(ctx, http.MethodGet, "/v1/executions/"+escape(id)+"/events?after="+strconv.FormatInt(after, 10), nil, nil)
	if err != nil {
		return api.EventList{}, err
	}
	var raw struct {
		Events     *[]api.RuntimeEvent `json:"events"`
		NextCursor *int64              `json:"nextCursor"`
	}
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &raw) != nil || raw.Events == nil || raw.NextCursor == nil {
		return api.EventList{}, fmt.Errorf("JSON replay after %d: status %d, body %s; want 200 {events:[…], nextCursor}", after, r.Status, clip(r.Body))
	}
	return api.EventList{Events: *raw.Events, NextCursor: *raw.NextCursor}, nil
}

func (c *cases) sseReplay(ctx context.Context) error {
	f, err := c.finishedExecution(ctx)
	if err != nil {
		return err
	}
	msgs, err := c.readStream(ctx, f.id, 2)
	if err != nil {
		return err
	}
	if len(msgs) == 0 {
		return errors.New("SSE replay after=2 returned no events")
	}
	for i, m := range msgs {
		if want := int64(3 + i); m.Event.Sequence != want {
			return fmt.Errorf("SSE replay after=2: event %d has sequence %d, want %d", i+1, m.Event.Sequence, want)
		}
	}
	last := msgs[len(msgs)-1].Event
	want := f.state.TerminalEvent()
	if last.Type != want {
		return fmt.Errorf("SSE replay after=2 ended with %s, want %s", last.Type, want)
	}
	if last.Sequence != f.events[len(f.events)-1].Sequence {
		return fmt.Errorf("SSE replay after=2 ended at sequence %d, the execution has %d events", last.Sequence, len(f.events))
	}
	return nil
}

func (c *cases) sseFraming(ctx context.Context) error {
	f, err := c.finishedExecution(ctx)
	if err != nil {
		return err
	}
	msgs, err := c.readStream(ctx, f.id, 0)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Type != string(m.Event.Type) {
			return fmt.Errorf("message of event %s has event: %q, want %q", m.Event.ID, m.Type, m.Event.Type)
		}
		if want := strconv.FormatInt(m.Event.Sequence, 10); m.ID != want {
			return fmt.Errorf("message of event %s has id: %q, want the sequence %q", m.Event.ID, m.ID, want)
		}
		if m.Event.ExecutionID != f.id || m.Event.ID != f.id+":"+strconv.FormatInt(m.Event.Sequence, 10) {
			return fmt.Errorf("event id %q of execution %q, want %s:<sequence>", m.Event.ID, m.Event.ExecutionID, f.id)
		}
	}
	if jsonString(eventsOf(msgs)) != jsonString(f.events) {
		return fmt.Errorf("the SSE stream carried sequences %v, the JSON replay %v", sequences(eventsOf(msgs)), sequences(f.events))
	}
	return nil
}

func (c *cases) jsonReplayTerminal(ctx context.Context) error {
	f, err := c.finishedExecution(ctx)
	if err != nil {
		return err
	}
	count := int64(len(f.events))
	list, err := c.eventList(ctx, f.id, count-1)
	if err != nil {
		return err
	}
	if len(list.Events) != 1 || jsonString(list.Events[0]) != jsonString(f.events[count-1]) {
		return fmt.Errorf("replay after %d returned sequences %v, want exactly the terminal event %d", count-1, sequences(list.Events), count)
	}
	if !sdk.IsTerminalEvent(list.Events[0].Type) {
		return fmt.Errorf("the last event is %s, not a terminal event", list.Events[0].Type)
	}
	if list.NextCursor != count {
		return fmt.Errorf("nextCursor %d, want %d", list.NextCursor, count)
	}
	return nil
}

func (c *cases) jsonReplayBeyondEnd(ctx context.Context) error {
	f, err := c.finishedExecution(ctx)
	if err != nil {
		return err
	}
	after := int64(len(f.events)) + 5
	list, err := c.eventList(ctx, f.id, after)
	if err != nil {
		return err
	}
	if len(list.Events) != 0 || list.NextCursor != after {
		return fmt.Errorf("replay after %d: %d events, nextCursor %d; want none and nextCursor %d (echoed)", after, len(list.Events), list.NextCursor, after)
	}
	return nil
}

func (c *cases) cancelTerminalNoop(ctx context.Context) error {
	f, err := c.finishedExecution(ctx)
	if err != nil {
		return err
	}
	r, err := c.s.raw.postJSON(ctx, "/v1/executions/"+escape(f.id)+":cancel", map[string]any{"reason": "too late"})
	if err != nil {
		return err
	}
	var exec api.Execution
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &exec) != nil {
		return fmt.Errorf("cancel of a finished execution: status %d, body %s; want 200 and the execution", r.Status, clip(r.Body))
	}
	if exec.State != f.state {
		return fmt.Errorf("cancel of a %s execution answered state %s", f.state, exec.State)
	}
	events, err := c.s.replay(ctx, f.id, 0)
	if err != nil {
		return err
	}
	if len(events) != len(f.events) {
		return fmt.Errorf("cancel of a finished execution appended events: %d, was %d", len(events), len(f.events))
	}
	return nil
}

// truncatedStream: a client's stream is cut while the execution waits for approval; the
// execution keeps waiting; a cancel ends it with exactly one run.cancelled; the abandoned action
// is then unknown.
func (c *cases) truncatedStream(ctx context.Context) error {
	id, actionID, err := c.awaitApproval(ctx, api.JSONObject{"requireApproval": true})
	if err != nil {
		return err
	}
	if err := c.expectState(ctx, id, api.ExecutionStateAwaitingApproval); err != nil {
		return fmt.Errorf("after the stream was cut: %w", err)
	}
	exec, err := c.s.sdk.CancelExecution(ctx, id, api.CancelExecutionRequest{Reason: new("caller stopped")})
	if err != nil {
		return err
	}
	if exec.State != api.ExecutionStateCancelled {
		return fmt.Errorf("cancel answered state %s, want cancelled", exec.State)
	}
	events, err := c.s.replay(ctx, id, 0)
	if err != nil {
		return err
	}
	if len(events) == 0 {
		return errors.New("the cancelled execution has no events")
	}
	n := 0
	for _, e := range events {
		if sdk.IsTerminalEvent(e.Type) {
			n++
		}
	}
	last := events[len(events)-1]
	if cancelled, _ := last.Data.AsRunCancelledData(); n != 1 || last.Type != api.StandardEventTypeRunCancelled || cancelled.Reason == nil || *cancelled.Reason != "caller stopped" {
		return fmt.Errorf("events end with %s %s after %d terminal events; want exactly one run.cancelled {reason:\"caller stopped\"}, last", last.Type, jsonString(last.Data), n)
	}
	r, err := c.respond(ctx, id, actionID, []byte(`{"approved":true}`))
	if err != nil {
		return err
	}
	if err := expectProblem(r, http.StatusNotFound, problem("ACTION_NOT_FOUND", "Action not found: "+actionID)); err != nil {
		return fmt.Errorf("answering the abandoned action: %w", err)
	}
	return nil
}

func eventsOf(msgs []sseMessage) []api.RuntimeEvent {
	out := make([]api.RuntimeEvent, len(msgs))
	for i, m := range msgs {
		out[i] = m.Event
	}
	return out
}

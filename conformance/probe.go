package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// errProbeTimeout is the reference's detail for a probe that outlived its timeout.
var errProbeTimeout = errors.New("Conformance probe timed out")

// runScenario is the reference's runProviderConformance over HTTP: checks 1–17 of §14, in the
// reference's order, each named "<scenario>/<check>".
func (s *suite) runScenario(ctx context.Context, sc Scenario, m api.ProviderManifest, found bool) {
	add := func(check string, passed bool, detail string) {
		s.add(Check{Name: sc.Name + "/" + check, Passed: passed, Detail: detail})
	}
	if !found {
		add("manifest-valid", false, fmt.Sprintf("provider %s is not listed by GET /v1/runtime/capabilities", s.opts.ProviderID))
		return
	}
	if problems := manifestProblems(m); len(problems) > 0 {
		add("manifest-valid", false, strings.Join(problems, "; "))
		return
	}
	add("manifest-valid", true, "")
	if sc.Input == "" {
		sc.Input = s.opts.Input
	}
	if sc.ExpectedState == "" {
		sc.ExpectedState = api.ExecutionStateSucceeded
	}

	var executionID string
	err := func() error {
		probeCtx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
		defer cancel()
		conv, err := s.sdk.CreateConversation(probeCtx, api.CreateConversationRequest{Metadata: &api.JSONObject{"suite": "conformance"}})
		if err != nil {
			return timeoutOr(probeCtx, err)
		}
		req := api.StartExecutionRequest{
			ConversationID:       conv.ID,
			ProviderID:           s.opts.ProviderID,
			Input:                sc.Input,
			RequiredCapabilities: new(append([]string{}, sc.RequiredCapabilities...)),
			IdempotencyKey:       new("conformance-" + sc.Name),
		}
		if sc.Config != nil {
			req.Config = sc.Config
		}
		exec, err := s.sdk.StartExecution(probeCtx, req)
		if err != nil {
			return timeoutOr(probeCtx, err)
		}
		executionID = exec.ID
		s.track(exec.ID)

		again, err := s.sdk.StartExecution(probeCtx, req)
		switch {
		case err != nil:
			add("idempotency-reuse", false, err.Error())
		case again.ID != exec.ID:
			s.track(again.ID)
			add("idempotency-reuse", false, fmt.Sprintf("the same request with the same key started %s, want %s", again.ID, exec.ID))
		default:
			add("idempotency-reuse", true, "")
		}
		conflicting := req
		conflicting.Input = sc.Input + " (conflicting request)"
		other, err := s.sdk.StartExecution(probeCtx, conflicting)
		switch {
		case errors.Is(err, sdk.ErrIdempotencyConflict):
			add("idempotency-conflict", true, "")
		case err == nil:
			s.track(other.ID)
			add("idempotency-conflict", false, fmt.Sprintf("a different request with the same key was answered with execution %s, want 409 IDEMPOTENCY_CONFLICT", other.ID))
		default:
			add("idempotency-conflict", false, err.Error())
		}

		events, err := s.collect(probeCtx, exec.ID, sc)
		if err != nil {
			return err
		}
		// The stream may have used the whole probe time (a server that never closes it after
		// the terminal event); what follows gets its own bound.
		evalCtx, cancelEval := context.WithTimeout(ctx, s.opts.Timeout)
		defer cancelEval()
		final, err := s.sdk.GetExecution(evalCtx, exec.ID)
		if err != nil {
			return err
		}
		artifacts, err := s.sdk.ListArtifacts(evalCtx, exec.ID)
		if err != nil {
			return err
		}
		checks := Evaluate(sc, final, events, artifacts, func(after int64) ([]api.RuntimeEvent, error) {
			return s.replay(evalCtx, exec.ID, after)
		})
		for _, c := range checks {
			add(c.Name, c.Passed, c.Detail)
		}
		return nil
	}()
	if err != nil {
		add("execution-probe", false, err.Error())
	}
	if executionID != "" {
		passed, detail := s.cleanupProbe(executionID)
		add("execution-cleanup", passed, detail)
	}
}

// collect reads the execution's events from its SSE stream, answering actions and cancelling
// as the scenario says, until the server closes the stream after the terminal event. A stream
// that ends early is reopened after the last sequence received. Nothing is repaired: a gap or a
// duplicate the server sends is collected as sent.
func (s *suite) collect(ctx context.Context, id string, sc Scenario) ([]api.RuntimeEvent, error) {
	var events []api.RuntimeEvent
	var cursor int64
	terminal := false
	for {
		st, err := s.raw.openStream(ctx, id, cursor)
		if err != nil {
			return events, timeoutOr(ctx, err)
		}
		received := 0
		var readErr error
		for m, err := range st.messages {
			if err != nil {
				readErr = err
				break
			}
			received++
			e := m.Event
			events = append(events, e)
			cursor = e.Sequence
			terminal = terminal || sdk.IsTerminalEvent(e.Type)
			if err := s.react(ctx, id, e, sc); err != nil {
				st.Close()
				return events, timeoutOr(ctx, err)
			}
		}
		st.Close()
		switch {
		case terminal:
			// Read on to the end of the stream so events after the terminal one are seen; a
			// server that keeps the stream open anyway is stopped by the timeout.
			return events, nil
		case ctx.Err() != nil:
			return events, errProbeTimeout
		case readErr != nil && !isDrop(readErr):
			return events, fmt.Errorf("event stream of %s: %w", id, readErr)
		case received == 0:
			// The stream closed with nothing new: fine while the execution runs (a server may
			// end streams, clients resume), not once it has ended.
			exec, err := s.sdk.GetExecution(ctx, id)
			if err != nil {
				return events, timeoutOr(ctx, err)
			}
			if sdk.IsTerminalState(exec.State) {
				return events, fmt.Errorf("the event stream after sequence %d ended without a terminal event; the execution is %s", cursor, exec.State)
			}
			if !pause(ctx, 50*time.Millisecond) {
				return events, errProbeTimeout
			}
		}
	}
}

// react answers an action.required event or cancels, as the scenario says.
func (s *suite) react(ctx context.Context, id string, e api.RuntimeEvent, sc Scenario) error {
	if e.Type == api.StandardEventTypeActionRequired && sc.ActionResponse != nil {
		action, _ := e.Data.AsActionRequest()
		actionID := action.ID
		if actionID == "" {
			return fmt.Errorf("action.required event %s has no data.id", e.ID)
		}
		if _, err := s.sdk.RespondToAction(ctx, id, actionID, *sc.ActionResponse); err != nil {
			return err
		}
	}
	if sc.CancelAfterEvent != "" && e.Type == sc.CancelAfterEvent {
		if _, err := s.sdk.CancelExecution(ctx, id, api.CancelExecutionRequest{Reason: new("Conformance cancellation probe")}); err != nil {
			return err
		}
	}
	return nil
}

// cleanupProbe is the reference's execution-cleanup: cancel the execution if it has not
// finished, then pass iff its last event carries no providerCleanupError.
func (s *suite) cleanupProbe(id string) (bool, string) {
	if _, err := s.cancelIfRunning(id); err != nil {
		return false, err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.CleanupTimeout)
	defer cancel()
	events, err := s.replay(ctx, id, 0)
	if err != nil {
		return false, err.Error()
	}
	if len(events) == 0 {
		return false, "the execution has no events"
	}
	if cancelled, _ := events[len(events)-1].Data.AsRunCancelledData(); cancelled.ProviderCleanupError != nil {
		return false, *cancelled.ProviderCleanupError
	}
	return true, ""
}

// replay reads every event after the cursor from the JSON replay, page by page (a server may
// cap a page).
func (s *suite) replay(ctx context.Context, id string, after int64) ([]api.RuntimeEvent, error) {
	var out []api.RuntimeEvent
	for {
		page, err := s.sdk.ListEvents(ctx, id, after, 0)
		if err != nil {
			return out, err
		}
		if len(page.Events) == 0 {
			return out, nil
		}
		out = append(out, page.Events...)
		if page.NextCursor <= after {
			return out, fmt.Errorf("JSON replay after %d answered nextCursor %d", after, page.NextCursor)
		}
		after = page.NextCursor
	}
}

// manifestProblems validates a manifest against the ProviderManifest schema.
func manifestProblems(m api.ProviderManifest) []string {
	var p []string
	for field, v := range map[string]string{"id": m.ID, "name": m.Name, "version": m.Version} {
		if v == "" {
			p = append(p, field+" must be a non-empty string")
		}
	}
	if m.ProtocolVersion != api.ProviderManifestProtocolVersionN20260902 {
		p = append(p, fmt.Sprintf("protocolVersion %q, want %q", m.ProtocolVersion, api.ProviderManifestProtocolVersionN20260902))
	}
	if len(m.Topologies) == 0 {
		p = append(p, "topologies must not be empty")
	}
	for _, t := range m.Topologies {
		switch t {
		case api.RuntimeTopologyEmbedded, api.RuntimeTopologySubprocess, api.RuntimeTopologyRemote:
		default:
			p = append(p, fmt.Sprintf("unknown topology %q", t))
		}
	}
	if m.Capabilities == nil {
		p = append(p, "capabilities must be an object")
	}
	for name, level := range m.Capabilities {
		if name == "" {
			p = append(p, "capability names must be non-empty")
		}
		switch level {
		case api.SupportLevelNative, api.SupportLevelEmulated, api.SupportLevelDegraded, api.SupportLevelUnsupported:
		default:
			p = append(p, fmt.Sprintf("capability %s has unknown support level %q", name, level))
		}
	}
	slices.Sort(p)
	return p
}

// timeoutOr reports the reference's timeout message when ctx ran out, and err otherwise.
func timeoutOr(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errProbeTimeout
	}
	return err
}

// isDrop reports whether a stream read error is a dropped connection, which a client recovers
// from by reconnecting.
func isDrop(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || strings.Contains(err.Error(), "connection reset")
}

// pause waits d or until ctx ends; false if ctx ended.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// sameJSONValue reports whether a and b encode to the same JSON value: key order, spacing and
// number spelling (1 and 1.0) do not matter.
func sameJSONValue(a, b any) bool {
	var va, vb any
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil || json.Unmarshal(ja, &va) != nil || json.Unmarshal(jb, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func sequences(events []api.RuntimeEvent) []int64 {
	out := make([]int64, len(events))
	for i, e := range events {
		out[i] = e.Sequence
	}
	return out
}

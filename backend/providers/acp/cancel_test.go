package acp

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// cancelWhen runs scenario, cancels once trigger matches an event, and returns the outcome.
func cancelWhen(t *testing.T, h *harness, trigger func(api.RuntimeEvent) bool) (api.Execution, []api.RuntimeEvent) {
	t.Helper()
	id := h.start("work", nil)
	var cancelled <-chan error
	events := h.follow(id, func(e api.RuntimeEvent) {
		if cancelled == nil && trigger(e) {
			cancelled = h.cancelAsync(id, "caller stopped")
		}
	})
	if cancelled == nil {
		t.Fatalf("the cancellation trigger never matched:%s", describe(events))
	}
	if err := <-cancelled; err != nil {
		t.Fatalf("CancelExecution: %v", err)
	}
	return h.execution(id), events
}

func firstDelta(e api.RuntimeEvent) bool { return e.Type == api.StandardEventTypeOutputTextDelta }

func actionRequired(e api.RuntimeEvent) bool { return e.Type == api.StandardEventTypeActionRequired }

// requireCleanCancel checks one run.cancelled, last, with the reason and no providerCleanupError.
// Whether the agent was kept warm or torn down is the caller's to check.
func requireCleanCancel(t *testing.T, h *harness, exec api.Execution, events []api.RuntimeEvent) {
	t.Helper()
	last := requireTerminal(t, exec, events, api.ExecutionStateCancelled)
	if last.Type != api.StandardEventTypeRunCancelled || deref(typed(last.Data.AsRunCancelledData()).Reason) != "caller stopped" {
		t.Fatalf("terminal event = %s %v", last.Type, last.Data)
	}
	if cleanup := typed(last.Data.AsRunCancelledData()).ProviderCleanupError; cleanup != nil {
		t.Fatalf("providerCleanupError = %v, want none", *cleanup)
	}
	requireNoLeak(t, events)
}

// wireMethods are the methods of the notifications and requests the agent received, in order;
// responses appear as "response:<outcome>" for permission answers.
func wireMethods(h *harness) []string {
	var out []string
	for _, line := range h.wireLines() {
		switch {
		case strings.Contains(line, `"method":"session/cancel"`):
			out = append(out, "session/cancel")
		case strings.Contains(line, `"outcome":{"outcome":"cancelled"}`):
			out = append(out, "response:cancelled")
		}
	}
	return out
}

// An agent that ignores session/cancel but exits when its stdin closes: it did not end its
// turn when asked, so it is not trusted with the conversation's next one and is torn down.
func TestCancelDuringHang(t *testing.T) {
	h := newHarness(t, "hang", nil)
	exec, events := cancelWhen(t, h, firstDelta)
	requireCleanCancel(t, h, exec, events)
	h.assertReaped(exec.ID)
	if !slices.Contains(wireMethods(h), "session/cancel") {
		t.Fatalf("session/cancel was not sent: %v", h.wireLines())
	}
	if !slices.Contains(h.agentSaw(), "stdin-closed") {
		t.Fatalf("the agent did not see its stdin close: %v", h.agentSaw())
	}
	if status := h.exitStatus(exec.ID); status != "exit status 0" {
		t.Fatalf("agent exit = %q, want a normal exit after stdin closed", status)
	}
}

// An agent that ignores session/cancel, the end of stdin and SIGTERM: only SIGKILL ends it, and
// the cancellation is still clean.
func TestCancelDuringStubbornAgent(t *testing.T) {
	h := newHarness(t, "stubborn", func(c *Config) { c.ShutdownGrace = Duration(time.Second) })
	exec, events := cancelWhen(t, h, firstDelta)
	requireCleanCancel(t, h, exec, events)
	h.assertReaped(exec.ID)
	if !slices.Contains(h.agentSaw(), "stdin-closed") {
		t.Fatalf("the agent did not see its stdin close: %v", h.agentSaw())
	}
	if status := h.exitStatus(exec.ID); status != "signal: killed" {
		t.Fatalf("agent exit = %q, want it SIGKILLed", status)
	}
}

// Cancelling while a permission request waits: the request is answered cancelled before
// session/cancel is sent (ACP requires it), and the cancellation is clean. The agent ends its
// turn (stop reason cancelled), so its process stays warm for the conversation.
//
// The fixture ends its turn (stop reason cancelled) as soon as its permission is answered
// cancelled, so the turn can be over before teardown gets to session/cancel, which is then
// rightly not sent (there is no turn to cancel): both wires are correct, and in both the
// cancelled answer comes first.
func TestCancelDuringPermission(t *testing.T) {
	h := newHarness(t, "permission", nil)
	exec, events := cancelWhen(t, h, actionRequired)
	requireCleanCancel(t, h, exec, events)
	h.assertWarm(exec.ID)
	got := wireMethods(h)
	if !slices.Equal(got, []string{"response:cancelled", "session/cancel"}) && !slices.Equal(got, []string{"response:cancelled"}) {
		t.Fatalf("wire after the question = %v, want the cancelled answer, then session/cancel if the turn was still running", got)
	}
}

// A cooperative agent answers session/cancel with stop reason cancelled: the cancellation is
// clean and the process stays warm for the conversation; it exits on stdin close when the
// provider closes.
func TestCancelCooperativeAgent(t *testing.T) {
	h := newHarness(t, "cooperative", nil)
	exec, events := cancelWhen(t, h, firstDelta)
	requireCleanCancel(t, h, exec, events)
	h.assertWarm(exec.ID)
	if got := wireMethods(h); !slices.Equal(got, []string{"session/cancel"}) {
		t.Fatalf("wire after the cancel = %v, want one session/cancel", got)
	}
	h.provider.Close()
	h.assertReaped(exec.ID)
	if status := h.exitStatus(exec.ID); status != "exit status 0" {
		t.Fatalf("agent exit = %q, want a normal exit on stdin close", status)
	}
}

// The run timeout bounds the whole execution: a hanging agent fails generically and is reaped.
func TestRunTimeoutFails(t *testing.T) {
	h := newHarness(t, "hang", func(c *Config) { c.RunTimeout = Duration(300 * time.Millisecond) })
	exec, events := h.run("work", nil)
	requireGenericFailure(t, exec, events)
	if !errors.Is(h.failure(exec.ID), errRunTimeout) {
		t.Fatalf("failure cause = %v", h.failure(exec.ID))
	}
	h.assertReaped(exec.ID)
}

// The initialization timeout bounds the initialize handshake.
func TestInitializationTimeoutFails(t *testing.T) {
	h := newHarness(t, "silent-init", func(c *Config) { c.InitializationTimeout = Duration(200 * time.Millisecond) })
	exec, events := h.run("work", nil)
	requireGenericFailure(t, exec, events)
	h.assertReaped(exec.ID)
}

// The Cancel hook reports "ACP process closure was not confirmed" when its deadline passes before
// the child's exit is confirmed; teardown still finishes and reaps the child.
func TestCancelHookReportsUnconfirmedClosure(t *testing.T) {
	h := newHarness(t, "stubborn", func(c *Config) { c.ShutdownGrace = Duration(time.Second) })
	id := h.start("work", nil)
	var hookErr error
	events := h.follow(id, func(e api.RuntimeEvent) {
		if firstDelta(e) && hookErr == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			hookErr = h.provider.Cancel(ctx, id, "")
		}
	})
	if hookErr == nil || hookErr.Error() != "ACP process closure was not confirmed" {
		t.Fatalf("Cancel = %v, want the unconfirmed-closure error", hookErr)
	}
	// The hook was called outside a runtime cancellation, so the teardown ends the turn: failed.
	requireGenericFailure(t, h.execution(id), events)
	h.assertReaped(id)
}

// A Cancel for an execution with no agent (never started, or finished) has nothing to clean up.
func TestCancelHookWithoutAgentSucceeds(t *testing.T) {
	h := newHarness(t, "stream", nil)
	if err := h.provider.Cancel(context.Background(), "exec_unknown", "reason"); err != nil {
		t.Fatalf("Cancel = %v", err)
	}
	exec, events := h.run("hello", nil)
	requireTerminal(t, exec, events, api.ExecutionStateSucceeded)
	if err := h.provider.Cancel(context.Background(), exec.ID, ""); err != nil {
		t.Fatalf("Cancel after the end = %v", err)
	}
}

// One execution id runs at most once at a time.
func TestSecondConcurrentRunOfOneExecutionIsRefused(t *testing.T) {
	p, err := New(Config{Command: fixtureAgent})
	if err != nil {
		t.Fatal(err)
	}
	first := newTurn(p, nil)
	if !p.register("exec_1", first) {
		t.Fatal("first registration refused")
	}
	if p.register("exec_1", newTurn(p, nil)) {
		t.Fatal("second concurrent registration accepted")
	}
	p.unregister("exec_1", first)
	if !p.register("exec_1", newTurn(p, nil)) {
		t.Fatal("registration after the first run ended refused")
	}
}

package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// follower is run and watch following one execution: it prints the text as it arrives, asks
// the execution's questions (or answers them from the flags) and keeps consuming events while a
// question is open, so that a question answered elsewhere, or an execution that ended, takes
// the question off the screen.
type follower struct {
	a      *app
	g      *globals
	client *sdk.Client
	id     string
	policy answerPolicy
	lines  *prompter
	// screen is chat's line editor at a terminal: questions are its prompts, and notices go
	// above the reply's unfinished line without ending it (nil for run and watch).
	screen *chatTerminal
	// interruptCancels: Ctrl-C cancels the execution (run); otherwise it stops watching (watch).
	interruptCancels bool
	// eofCancels: the end of input at a question cancels the execution (run); otherwise the
	// question is left unanswered (watch).
	eofCancels bool

	// interrupted is closed when the execution is being cancelled; open questions stop waiting.
	interrupted   chan struct{}
	interruptOnce sync.Once
	prompts       sync.WaitGroup // the goroutines of open questions

	mu             sync.Mutex // orders everything printed; guards the fields below
	cancelling     bool       // once cancelling, no more text is printed
	midLine        bool       // the last text printed did not end with a newline
	questionOnLine bool       // a question is on the screen, waiting on its line

	// Owned by the event loop.
	open        *openPrompt        // the question on the screen, if any
	catchingUp  bool               // replaying the past (watch): questions are not asked yet
	pending     *api.ActionRequest // while catching up: the action required and not yet answered
	artifacts   []api.Artifact
	cancelledBy *api.Actor // who cancelled, when run.cancelled names them (actor.go)
	// why it was cancelled, when run.cancelled says and it was not this harnessctl's Ctrl-C
	// (another client's reason, or "Interrupted by exec_…" of a busy conversation's newer turn)
	cancelledWhy string
}

func newFollower(a *app, g *globals, c *sdk.Client, id string, policy answerPolicy) *follower {
	return &follower{a: a, g: g, client: c, id: id, policy: policy, lines: &prompter{in: a.stdin}, interrupted: make(chan struct{})}
}

// follow follows the execution from the event after `after` to its end and returns the exit
// code: how the execution ended.
func (f *follower) follow(ctx context.Context, interrupts <-chan os.Signal, after int64) int {
	waitCtx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	done := make(chan struct{})
	defer close(done)
	go f.watchInterrupts(waitCtx, interrupts, stopWaiting, done)

	if f.catchingUp {
		var err error
		if after, err = f.catchUp(waitCtx); err != nil {
			return f.stopped(waitCtx, err)
		}
	}
	for event, err := range f.client.Events(waitCtx, f.id, after) {
		if err != nil {
			return f.stopped(waitCtx, err)
		}
		f.handle(waitCtx, event)
	}
	f.withdraw("") // the terminal event did; this is for a stream that ended without one
	f.prompts.Wait()
	f.finishLine()
	final, err := f.client.GetExecution(ctx, f.id)
	if err != nil {
		return f.a.fail(err)
	}
	for _, art := range f.artifacts {
		f.notice("harnessctl: artifact %s\n", describeArtifact(art))
	}
	if f.g.json {
		printJSON(f.a.stdout, final)
	}
	switch final.State {
	case api.ExecutionStateSucceeded:
		return exitOK
	case api.ExecutionStateFailed:
		msg := ""
		if final.Error != nil {
			msg = ": " + final.Error.Message
		}
		f.notice("harnessctl: execution %s failed%s\n", f.id, msg)
		return exitFailed
	case api.ExecutionStateCancelled:
		if by := interruptedBy(final); by != "" {
			// A newer message of an interrupt conversation: said as what it is, not as a bare
			// cancellation (the reason is the snapshot's cancelReason, so also when caught up).
			f.notice("harnessctl: turn %s interrupted by %s: a newer message cancelled it\n", f.id, by)
			return exitCancelled
		}
		why := ""
		if f.cancelledWhy != "" {
			why = ": " + f.cancelledWhy
		}
		f.notice("harnessctl: execution %s cancelled%s%s\n", f.id, byActor(f.cancelledBy), why)
		return exitCancelled
	}
	return f.a.fail(fmt.Errorf("execution %s is %s after its terminal event", f.id, final.State))
}

// stopped ends follow after the event stream's error.
func (f *follower) stopped(waitCtx context.Context, err error) int {
	f.withdraw("")
	f.prompts.Wait()
	f.finishLine()
	if waitCtx.Err() != nil {
		if f.interruptCancels {
			f.notice("harnessctl: stopped waiting; execution %s may still be cancelling\n", f.id)
			return exitCancelled
		}
		f.notice("harnessctl: stopped watching; execution %s goes on\n", f.id)
		return exitError
	}
	return f.a.fail(err)
}

// catchUp replays the events so far (watch), printing the text, and then asks the question
// still open, if any. It returns the cursor to follow from.
func (f *follower) catchUp(ctx context.Context) (int64, error) {
	var cursor int64
	for {
		page, err := f.client.ListEvents(ctx, f.id, cursor, 0)
		if err != nil {
			return 0, err
		}
		if len(page.Events) == 0 {
			break
		}
		for _, event := range page.Events {
			f.handle(ctx, event)
		}
		cursor = page.NextCursor
	}
	f.catchingUp = false
	if f.pending != nil {
		f.ask(ctx, *f.pending)
		f.pending = nil
	}
	return cursor, nil
}

// watchInterrupts handles Ctrl-C: for run, the first cancels the execution and the second stops
// waiting; for watch, the first stops watching.
func (f *follower) watchInterrupts(ctx context.Context, interrupts <-chan os.Signal, stopWaiting func(), done <-chan struct{}) {
	select {
	case <-interrupts:
	case <-done:
		return
	}
	if !f.interruptCancels {
		stopWaiting()
		return
	}
	f.cancel(ctx)
	select {
	case <-interrupts:
		stopWaiting()
	case <-done:
	}
}

// cancelReason is what a Ctrl-C records in run.cancelled.
const cancelReason = "interrupted at the terminal (harnessctl)"

// cancel asks the server to cancel the execution, once; the event stream then brings
// run.cancelled. From the notice on, no more text is printed.
func (f *follower) cancel(ctx context.Context) {
	f.interruptOnce.Do(func() {
		f.mu.Lock()
		f.cancelling = true
		f.endLineLocked()
		f.questionOnLine = false
		fmt.Fprintf(f.a.stderr, "\nharnessctl: cancelling execution %s (Ctrl-C again to stop waiting)\n", f.id)
		f.mu.Unlock()
		close(f.interrupted)
		go func() {
			if _, err := f.client.CancelExecution(ctx, f.id, api.CancelExecutionRequest{Reason: new(cancelReason)}); err != nil && ctx.Err() == nil {
				f.notice("harnessctl: cancel: %v\n", err)
			}
		}()
	})
}

// handle prints text, asks questions, and takes a question off the screen once it no longer
// applies.
func (f *follower) handle(ctx context.Context, event api.RuntimeEvent) {
	switch event.Type {
	case api.StandardEventTypeOutputTextDelta:
		delta, _ := event.Data.AsTextDeltaData()
		f.text(delta.Text)
	case api.StandardEventTypeActionRequired:
		action, err := event.Data.AsActionRequest()
		if err != nil || action.ID == "" {
			f.notice("harnessctl: unreadable action request in event %s\n", event.ID)
			return
		}
		if f.catchingUp {
			f.pending = &action
			return
		}
		f.ask(ctx, action)
	case api.StandardEventTypeActionResponded:
		responded, _ := event.Data.AsActionRespondedData()
		if f.pending != nil && f.pending.ID == responded.ActionID {
			f.pending = nil
		}
		if f.open != nil && f.open.actionID == responded.ActionID {
			f.withdraw("it was " + answerVerb(responded) + " elsewhere" + byActor(responded.Actor))
		} else if responded.Actor != nil {
			f.notice("harnessctl: %s was %s%s\n", responded.ActionID, answerVerb(responded), byActor(responded.Actor))
		}
	case api.StandardEventTypeArtifactCreated:
		if art, err := event.Data.AsArtifact(); err == nil {
			f.artifacts = append(f.artifacts, art)
		}
	default:
		if event.Type == api.StandardEventTypeRunCancelled {
			cancelled, _ := event.Data.AsRunCancelledData()
			f.cancelledBy = cancelled.Actor
			if cancelled.Reason != nil && *cancelled.Reason != cancelReason {
				f.cancelledWhy = *cancelled.Reason
			}
		}
		if event.Type.Terminal() {
			f.pending = nil
			f.withdraw("the execution ended (" + string(event.Type) + ")")
		}
	}
}

// text prints streamed output, unless --json or cancelling.
func (f *follower) text(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.g.json || f.cancelling || s == "" {
		return
	}
	fmt.Fprint(f.a.stdout, s)
	f.midLine = !strings.HasSuffix(s, "\n")
}

// typedLine notes that a line was typed at the terminal while text was being printed: its echo
// (and the Enter) ended the line the text was on (chat, where a line can be typed during a
// reply).
func (f *follower) typedLine() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.midLine = false
}

// notice prints on stderr, on a line of its own.
func (f *follower) notice(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.screen == nil {
		f.finishLineLocked()
	}
	fmt.Fprintf(f.a.stderr, format, args...)
}

// finishLine ends the line of text or the question left open, before the closing notices.
func (f *follower) finishLine() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finishLineLocked()
}

func (f *follower) finishLineLocked() {
	f.endLineLocked()
	if f.questionOnLine {
		fmt.Fprintln(f.a.stderr)
		f.questionOnLine = false
	}
}

// endLineLocked ends a line of streamed text before anything else is printed.
func (f *follower) endLineLocked() {
	if f.midLine {
		fmt.Fprintln(f.a.stdout)
		f.midLine = false
	}
}

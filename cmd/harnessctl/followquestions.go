package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The follower's questions: an action.required answered from the flags or asked at the terminal,
// one at a time, withdrawn when the execution stops waiting for it.

// ask answers action from the flags, or puts the question on the screen and waits for the
// answer in a goroutine, so that the event loop goes on.
func (f *follower) ask(ctx context.Context, action api.ActionRequest) {
	f.withdraw("another question came") // one question at a time; the newer one applies
	select {
	case <-f.interrupted:
		return // cancelling: nothing more is asked
	default:
	}
	if response, notice, ok := f.policy.answer(action); ok {
		f.notice("harnessctl: %s\n", notice)
		f.respond(ctx, action, response)
		return
	}
	// A connection signalled before the question is no news about it.
	select {
	case <-f.streamReconnected():
	default:
	}
	op := newOpenPrompt(action.ID)
	f.open = op
	lines, eof := f.lines.open()
	f.showQuestion(action)
	f.prompts.Add(1)
	go f.await(ctx, op, action, lines, eof)
}

// showQuestion puts the question on the screen, on a line of its own: the editor's prompt in
// chat at a terminal, else printed on stderr where the answer is typed.
func (f *follower) showQuestion(action api.ActionRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.endLineLocked()
	if f.screen != nil {
		f.screen.setPrompt(question(action))
		return
	}
	fmt.Fprint(f.a.stderr, question(action))
	f.questionOnLine = true
}

// await waits for the answer to one question: a line, the end of input, or the question's
// withdrawal. While it waits, each reconnection of the event stream is checked against the
// execution's state: a question the execution no longer waits for is withdrawn.
func (f *follower) await(ctx context.Context, op *openPrompt, action api.ActionRequest, lines <-chan string, eof <-chan struct{}) {
	defer f.prompts.Done()
	defer func() { f.lines.close(lines) }()
	for {
		select {
		case line := <-lines:
			f.mu.Lock()
			f.questionOnLine = false // the terminal echoed the line and its newline
			f.mu.Unlock()
			response, ok := responseTo(action, line)
			if !ok {
				// Neither yes nor no ("wait, what will this do?"): not an answer; ask again.
				f.notice("harnessctl: %q is neither y (approve) nor n (deny): %s is still waiting for an answer\n", line, action.ID)
				lines, eof = f.lines.open()
				f.showQuestion(action)
				continue
			}
			if !op.take() {
				return // withdrawn at the same moment: the line is not an answer any more
			}
			f.respond(ctx, action, response)
			return
		case <-eof:
			if !op.take() {
				return
			}
			if f.eofCancels {
				f.cancel(ctx)
				return
			}
			f.notice("harnessctl: end of input: %s stays unanswered\n", action.ID)
			return
		case <-f.streamReconnected():
			exec, err := f.client.GetExecution(ctx, f.id)
			if err == nil && exec.State != api.ExecutionStateAwaitingApproval && exec.State != api.ExecutionStateAwaitingInput {
				f.withdrawPrompt(op, fmt.Sprintf("the event stream reconnected and the execution is %s", exec.State))
			}
		case <-op.withdrawn:
			return
		case <-f.interrupted:
			op.take()
			return
		case <-ctx.Done():
			op.take()
			return
		}
	}
}

// streamReconnected signals each new event-stream connection (nil, never ready, without a
// watching transport).
func (f *follower) streamReconnected() <-chan struct{} {
	if f.a.wire == nil {
		return nil
	}
	return f.a.wire.streams
}

// withdraw takes the open question off the screen, saying why (nothing when why is empty, or
// when it was answered here first).
func (f *follower) withdraw(why string) {
	if f.open == nil {
		return
	}
	f.withdrawPrompt(f.open, why)
	f.open = nil
}

func (f *follower) withdrawPrompt(op *openPrompt, why string) {
	if !op.withdraw() {
		return
	}
	if f.screen != nil {
		// The typing prompt, not none: a line may be half typed after the question, and it must
		// stay below the replies.
		f.screen.setPrompt(f.screen.typingPrompt)
	}
	if why == "" {
		return
	}
	f.notice("harnessctl: no longer asking about %s: %s\n", op.actionID, why)
}

// respond sends an answer. An action already resolved or gone was answered or cancelled
// meanwhile: the events say what happened.
func (f *follower) respond(ctx context.Context, action api.ActionRequest, response api.ActionResponse) {
	_, err := f.client.RespondToAction(ctx, f.id, action.ID, response)
	switch {
	case errors.Is(err, sdk.ErrActionAlreadyResolved):
		f.notice("harnessctl: %s was already answered elsewhere; this answer was not sent\n", action.ID)
	case errors.Is(err, sdk.ErrActionNotFound):
	case err != nil && ctx.Err() == nil:
		f.notice("harnessctl: answering %s: %v\n", action.ID, err)
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// chatSession is one `harnessctl chat`. Two goroutines share it: run (the command's own)
// follows the turns one after the other, in the order they were sent, and owns Ctrl-C;
// readLines takes the lines typed and sends each as the next turn. On a terminal, lines are
// read while a turn runs too (what such a line does is the busy policy's business, decided by
// the server); from a pipe only once the previous reply has ended, so a script's lines are
// turns in order. Replies are never interleaved: a turn that runs beside another (parallel)
// is printed after it, from its first event.
type chatSession struct {
	a           *app
	g           *globals
	client      *sdk.Client
	conv        *sdk.Conversation
	turn        api.StartExecutionRequest // what every turn sends besides its input
	policy      api.BusyPolicy            // what a line typed during a turn does (for the notices)
	answers     answerPolicy
	lines       *prompter
	interactive bool          // stdin is a terminal
	screen      *chatTerminal // the line editor, at a terminal (nil: lines as the terminal gives them)

	mu       sync.Mutex
	queue    []chatTurn    // to follow to their end, in order; queue[0] is being followed
	current  *follower     // the follower of queue[0], while it follows
	sending  bool          // a line is being sent
	kept     string        // a line that was not sent (busy, or an error); an empty line sends it
	ended    bool          // input ended: leave once every turn has been followed
	prompted bool          // the prompt is on the screen, waiting for a line
	changed  chan struct{} // closed and replaced when anything above changes

	over chan struct{} // closed when run returns: the chat was left
}

// chatTurn is an execution the chat follows.
type chatTurn struct {
	exec api.Execution
	// why is a notice before the reply; announce (stdout) repeats the line the reply answers,
	// for a turn whose line was not typed just before it (typed during another reply, or an
	// unfinished turn found when continuing).
	why, announce string
}

// run follows the turns as they come and shows the prompt when none is left, until input ends
// or Ctrl-C at the prompt. Ctrl-C during a turn is its follower's: it cancels that turn.
func (s *chatSession) run(ctx context.Context, interrupts <-chan os.Signal) int {
	go s.readLines(ctx)
	defer close(s.over)
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			t := s.queue[0]
			fl := s.newFollower(t.exec.ID)
			s.current, s.prompted = fl, false
			s.mu.Unlock()
			if t.why != "" {
				fl.notice("harnessctl: %s\n", t.why)
			}
			if t.announce != "" {
				fl.text(t.announce + "\n")
			}
			fl.follow(ctx, interrupts, 0) // its exit code is the turn's; the chat goes on
			s.mu.Lock()
			s.current = nil
			s.queue = s.queue[1:]
			s.changedLocked()
			s.mu.Unlock()
			continue
		}
		if !s.sending {
			if s.ended {
				s.mu.Unlock()
				return s.leave()
			}
			if !s.prompted {
				s.promptLocked()
			}
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-interrupts:
			return s.leave()
		}
	}
}

// newFollower follows one turn as run follows its execution: Ctrl-C and the end of input at a
// question cancel it. It catches up first: a turn may have begun before it is followed (one
// queued behind another, or running beside it).
func (s *chatSession) newFollower(id string) *follower {
	fl := newFollower(s.a, s.g, s.client, id, s.answers)
	fl.lines = s.lines
	fl.screen = s.screen
	fl.interruptCancels, fl.eofCancels = true, true
	fl.catchingUp = true
	return fl
}

// leave ends the chat; the conversation stays.
func (s *chatSession) leave() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.screen != nil:
		s.screen.endPrompt()
	case s.prompted && s.interactive:
		fmt.Fprintln(s.a.stderr) // off the prompt's line
	}
	if s.kept != "" {
		fmt.Fprintf(s.a.stderr, "harnessctl: the kept line was not sent: %q\n", s.kept)
	}
	fmt.Fprintf(s.a.stderr, "harnessctl: left the chat; 'harnessctl chat %s' continues it\n", s.conv.ID)
	return exitOK
}

// promptLocked shows the prompt (on a terminal), with the kept line if there is one.
func (s *chatSession) promptLocked() {
	s.prompted = true
	if !s.interactive {
		return
	}
	if s.kept != "" {
		fmt.Fprintf(s.a.stderr, "harnessctl: an empty line sends the kept line: %q\n", s.kept)
	}
	if s.screen != nil {
		s.screen.setPrompt("> ")
		return
	}
	fmt.Fprint(s.a.stderr, "> ")
}

// readLines sends each line typed as the next turn, until input ends or the chat is left.
func (s *chatSession) readLines(ctx context.Context) {
	for {
		if !s.interactive && !s.waitUntilIdle() {
			return
		}
		lines, eof := s.lines.openMessage()
		select {
		case line := <-lines:
			s.send(ctx, line)
		case <-eof:
			s.mu.Lock()
			s.ended = true
			if len(s.queue) > 0 || s.sending {
				s.noticeLocked("harnessctl: end of input: the chat ends once the turns sent have been answered (Ctrl-C cancels the running one)\n")
			}
			s.changedLocked()
			s.mu.Unlock()
			return
		case <-s.over:
			s.lines.close(lines)
			return
		}
	}
}

// waitUntilIdle waits until no turn is followed or sent; false when the chat was left.
func (s *chatSession) waitUntilIdle() bool {
	for {
		s.mu.Lock()
		idle, changed := len(s.queue) == 0 && !s.sending, s.changed
		s.mu.Unlock()
		if idle {
			return true
		}
		select {
		case <-changed:
		case <-s.over:
			return false
		}
	}
}

// send starts line as the next turn. An empty line sends the kept one, if any. A line the
// conversation refuses (busy, under reject) or that cannot be sent is kept.
func (s *chatSession) send(ctx context.Context, line string) {
	s.mu.Lock()
	idle := len(s.queue) == 0
	if s.current != nil && s.interactive && s.screen == nil {
		s.current.typedLine()
	}
	if line == "" {
		if s.kept == "" {
			s.prompted = false // Enter alone: the prompt again
			s.changedLocked()
			s.mu.Unlock()
			return
		}
		line = s.kept
		s.noticeLocked("harnessctl: sending the kept line: %q\n", line)
	}
	s.kept, s.sending, s.prompted = "", true, false
	s.changedLocked()
	s.mu.Unlock()

	req := s.turn
	req.Input = line
	exec, err := s.conv.Start(ctx, req)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.sending = false
	s.changedLocked()
	var busy *sdk.BusyError
	switch {
	case errors.As(err, &busy):
		s.kept = line
		s.noticeLocked("harnessctl: the conversation is busy (%s has not ended): the line was not sent; it is kept, and an empty line sends it\n",
			strings.Join(busy.ExecutionIDs, ", "))
	case err != nil:
		s.kept = line
		s.noticeLocked("harnessctl: the line was not sent: %s; it is kept, and an empty line sends it again\n", strings.TrimPrefix(err.Error(), "harness: "))
	default:
		t := chatTurn{exec: exec}
		if !idle {
			t.announce = "> " + line
			s.noticeLocked("harnessctl: %s\n", s.sentDuringTurn(exec))
		}
		s.queue = append(s.queue, t)
	}
}

// sentDuringTurn says what became of a line typed while a turn ran.
func (s *chatSession) sentDuringTurn(exec api.Execution) string {
	switch {
	case len(exec.WaitingFor) > 0 && s.policy == api.BusyPolicyInterrupt:
		return fmt.Sprintf("%s interrupts %s: its reply follows", exec.ID, strings.Join(exec.WaitingFor, ", "))
	case len(exec.WaitingFor) > 0:
		return fmt.Sprintf("%s is queued: it waits for %s", exec.ID, strings.Join(exec.WaitingFor, ", "))
	}
	return fmt.Sprintf("%s was sent; its reply follows the running one's", exec.ID)
}

// noticeLocked prints a notice through the running turn's follower (which keeps it off the
// reply's line), or directly between turns.
func (s *chatSession) noticeLocked(format string, args ...any) {
	if s.current != nil {
		s.current.notice(format, args...)
		return
	}
	fmt.Fprintf(s.a.stderr, format, args...)
}

func (s *chatSession) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

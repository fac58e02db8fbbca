package acp

import (
	"context"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
)

// shutdown tears the process down once, whoever asks first (the end of a turn that cannot keep
// it, an eviction from the pool, the provider's Close), and returns the shared result.
func (s *session) shutdown() error {
	s.teardownOnce.Do(func() {
		go func() {
			s.teardownErr = s.teardown()
			close(s.teardownDone)
		}()
	})
	<-s.teardownDone
	return s.teardownErr
}

// teardown is the reference's cancellation ladder, every step bounded by the shutdown grace:
//  1. permission requests still waiting answer "cancelled" (ACP requires it before session/cancel),
//     written by the boundary itself: the handlers' answers depend on how soon the runtime gives
//     up the action, and stdin must not close under an answer still on its way;
//  2. if a turn is in progress, session/cancel, best effort;
//  3. stdin close → SIGTERM → SIGKILL, each followed by a wait for the child's exit;
//  4. our pipe ends close, which ends the SDK connection and every call still pending on it.
func (s *session) teardown() error {
	s.mu.Lock()
	s.stopped = true
	proc, sessionID := s.proc, s.sessionID
	s.mu.Unlock()
	if proc == nil {
		return nil // cancelled before anything was spawned
	}
	grace := s.settings.shutdownGrace

	s.cancelPermissions(grace)
	if s.promptInFlight.Load() && sessionID != "" {
		s.sendSessionCancel(grace)
	}
	confirmed := proc.stop(grace)
	proc.releasePipes()
	_ = s.fromWire.Close()
	if !confirmed {
		return errClosureUnconfirmed
	}
	s.observe.exited(s.owner, proc.cmd.ProcessState.String())
	return nil
}

// cancelPermissions has the boundary answer every pending permission request cancelled, without
// letting an agent that does not read its stdin hold teardown: the write is abandoned after grace,
// and it returns anyway once stdin is closed.
func (s *session) cancelPermissions(grace time.Duration) {
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		s.wire.cancelPendingPermissions()
	}()
	waitAtMost(answered, grace)
}

// sendSessionCancel writes the session/cancel notification of the turn in progress, once,
// without letting an agent that does not read its stdin hold teardown: the write is abandoned
// after grace, and it returns anyway once stdin is closed.
func (s *session) sendSessionCancel(grace time.Duration) {
	if !s.cancelSent.CompareAndSwap(false, true) {
		return
	}
	sessionID := s.native()
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		_ = s.conn.SendNotification(context.Background(), acpsdk.AgentMethodSessionCancel,
			acpsdk.CancelNotification{SessionId: sessionID})
	}()
	waitAtMost(sent, grace)
}

func waitAtMost(done <-chan struct{}, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	}
}

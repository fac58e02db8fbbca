package backend

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/harness-edge/harness-edge/backend/internal/hotwindow"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Resumer is the optional interface of a provider whose work outlives the process that started
// it (remote: the upstream execution goes on while the edge restarts). On Open, an execution
// the previous process left unfinished whose provider (registered in Options.Providers, under
// the execution's provider id) is a Resumer is resumed instead of failed by recovery:
//
//   - queued: it runs normally (run.started, then Run);
//   - running or awaiting_*: Resume is called in place of Run, with the same contract. The
//     Run's Checkpoint is the one the provider last committed (see WithCheckpoint); a pending
//     action stays pending (PendingAction, AwaitAction) and answers like any other;
//   - cancelling: Resume is called with its context already cancelled (so the provider can
//     re-attach and learn what its cleanup must stop; it must return promptly), then the
//     cancellation is finished: Canceler.Cancel, then run.cancelled (the reason given to the
//     first cancel is not kept).
//
// Events keep their sequences: what the provider emits continues after the last stored event.
type Resumer interface {
	Resume(ctx context.Context, run *Run) (Result, error)
}

// ErrNotResumable is what Resume returns for an execution it cannot pick up again; the
// execution then fails as recovery fails the executions of other providers.
var ErrNotResumable = errors.New("backend: execution cannot be resumed")

// resumableExecutions lists the unfinished executions whose registered provider can resume, and
// those waiting for their turn (turns.go), which never ran.
func (r *Runtime) resumableExecutions() ([]store.Execution, error) {
	var out []store.Execution
	err := r.store.ForEachExecution(func(rec store.Execution) bool {
		if !isTerminalState(rec.Execution.State) && r.ownedHere(rec) && (r.canResume(rec) || waitsForTurn(rec, r.hasProvider)) {
			out = append(out, rec)
		}
		return true
	}, r.damage.reportUndecodable)
	return out, err
}

// canResume reports whether rec's provider is registered here and can resume (a Resumer).
func (r *Runtime) canResume(rec store.Execution) bool {
	reg, ok := r.provider(rec.Execution.ProviderID)
	if !ok {
		return false
	}
	_, ok = reg.provider.(Resumer)
	return ok
}

// resumeExecution makes rec live again and continues it (see Resumer), or lets it wait on for
// its turn (turns.go).
func (r *Runtime) resumeExecution(rec store.Execution) error {
	if waitsForTurn(rec, r.hasProvider) {
		return turnDesk{r}.resumeTurn(rec)
	}
	id := rec.Execution.ID
	reg, ok := r.provider(rec.Execution.ProviderID)
	if !ok {
		return fmt.Errorf("resume %s: provider %s is not registered", id, rec.Execution.ProviderID)
	}
	last, err := r.store.LastSequence(id)
	if err != nil {
		return fmt.Errorf("resume %s: last sequence: %w", id, err)
	}
	artifacts, err := r.store.Artifacts(id)
	if err != nil {
		return fmt.Errorf("resume %s: artifacts: %w", id, err)
	}
	checkpoint, _, err := r.store.Checkpoint(id)
	if err != nil {
		return fmt.Errorf("resume %s: checkpoint: %w", id, err)
	}
	x := newExecution(r, rec, reg.provider)
	x.attachSpan(r.spans.resume(rec))
	x.nextSeq = last
	x.log = hotwindow.New(r.hotWindow, last) // the events up to last are read from the store
	x.resumedCheckpoint = checkpoint
	for _, a := range artifacts {
		x.artifactIDs[a.ID] = struct{}{}
	}
	if rec.PendingActionID != "" {
		action, found, err := r.store.Action(rec.PendingActionID)
		if err != nil {
			return fmt.Errorf("resume %s: pending action: %w", id, err)
		}
		if found && action.Status == store.ActionPending {
			p := &pendingAction{id: action.Request.ID, request: action.Request, reply: make(chan actionReply, 1)}
			x.open(p)
		}
	}
	r.live.put(x)
	close(x.admitted)

	switch rec.Execution.State {
	case api.ExecutionStateQueued:
		r.track(func() { x.runExecution() })
	case api.ExecutionStateCancelling:
		op := &cancelOperation{done: make(chan struct{})}
		x.cancelling = op
		x.stopRun(errors.New(msgExecutionAborted))
		r.track(func() {
			// The provider re-attaches first, its context already cancelled, so that its cleanup
			// hook knows the remote work it has to stop; then the cancellation finishes.
			_, _ = x.callResume(&Run{rt: r, x: x, config: deepCopyObject(x.config)})
			x.finishCancel(op, nil)
		})
	default:
		r.track(func() { x.resumeRun() })
	}
	r.log.Info("resumed an execution left unfinished by the previous process",
		"execution", id, "provider", rec.Execution.ProviderID, "state", rec.Execution.State, "after", last)
	return nil
}

// resumeRun is runExecution for a resumed execution: Resume instead of Run.
func (x *execution) resumeRun() {
	run := &Run{rt: x.rt, x: x, config: deepCopyObject(x.config)}
	result, err := x.callResume(run)
	if errors.Is(err, ErrNotResumable) {
		err = errors.New(msgRestartedBeforeFinish)
	}
	x.finishRun(result, err)
}

func (x *execution) callResume(run *Run) (result Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			x.rt.log.Error("provider panicked", "execution", x.id, "provider", x.providerID, "panic", v, "stack", string(debug.Stack()))
			err = fmt.Errorf("Provider panicked: %v", v)
		}
	}()
	return x.provider.(Resumer).Resume(x.runCtx, run)
}

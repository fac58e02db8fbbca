package backend

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// runExecution is the goroutine of one execution (docs/protocol.md §4.3).
func (x *execution) runExecution() {
	if x.rt.beforeRun != nil {
		<-x.admitted // the hook may act on the execution: it must be listed first
		x.rt.beforeRun(x.id)
	}
	if !x.startRun(false) {
		return
	}
	run := &Run{rt: x.rt, x: x, config: deepCopyObject(x.config)}
	result, err := x.callProvider(run)
	x.finishRun(result, err)
}

// startRun moves queued → running and appends run.started, unless cancellation got there first
// (then the provider is never invoked). The reference's "starting" state is passed through
// within this one atomic unit and is never observable. With wait, it returns once run.started
// is committed (a turn: turns.go); otherwise the provider's first emissions may share its
// commit.
func (x *execution) startRun(wait bool) bool {
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	if x.state() != api.ExecutionStateQueued || x.runCtx.Err() != nil {
		return false
	}
	at := now()
	rec := x.wrec
	rec.Execution.State = api.ExecutionStateRunning
	rec.Execution.StartedAt = &at
	rec.Execution.UpdatedAt = at
	rec.Execution.WaitingFor = nil // its turn came
	c := change{
		at:     at,
		rec:    &rec,
		events: []newEvent{stringEvent(api.StandardEventTypeRunStarted, "providerId", x.providerID)},
	}
	// Not waited for unless asked: nobody is answered by this step, and the provider's first
	// emissions can share its commit. Readers see running once it is durable.
	var err error
	if wait {
		err = x.commit(c)
	} else {
		err = x.enqueue(c)
	}
	if err != nil {
		if !x.isStranded() { // else reported as stranded
			x.rt.log.Error("start execution", "execution", x.id, "err", err)
		}
		return false
	}
	return true
}

// callProvider runs the provider, turning a panic into an execution failure instead of a crash
// of the whole runtime. The stack goes to the log, not into the caller-visible message.
func (x *execution) callProvider(run *Run) (result Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			x.rt.log.Error("provider panicked", "execution", x.id, "provider", x.providerID, "panic", v, "stack", string(debug.Stack()))
			err = fmt.Errorf("Provider panicked: %v", v)
		}
	}()
	return x.provider.Run(x.runCtx, run)
}

// finishRun records the provider's outcome (docs/protocol.md §4.3 steps 4–5).
func (x *execution) finishRun(result Result, runErr error) {
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	state := x.state()
	if isTerminalState(state) || state == api.ExecutionStateCancelling || x.isStranded() {
		return // cancellation, an earlier failure or the stranded loop owns the outcome
	}
	if x.leaseLost() {
		return // this node lost its lease: the node that takes it over fails the execution
	}
	if runErr != nil && errors.Is(context.Cause(x.runCtx), errRuntimeClosing) {
		return // the runtime is closing: recovery fails it on the next Open
	}
	switch {
	case runErr != nil:
		x.failLocked(providerErrorMessage(runErr))
	case state != api.ExecutionStateRunning:
		x.failLocked(msgUnresolvedAction)
	default:
		x.succeedLocked(result.FinalOutput)
	}
}

// succeedLocked appends output.text.done and run.completed and enters succeeded, as one unit.
func (x *execution) succeedLocked(finalOutput string) {
	at := now()
	rec := x.wrec
	rec.Execution.State = api.ExecutionStateSucceeded
	rec.Execution.FinalOutput = &finalOutput
	rec.Execution.EndedAt = &at
	rec.Execution.UpdatedAt = at
	err := x.commit(change{
		at:  at,
		rec: &rec,
		events: []newEvent{
			textEvent(api.StandardEventTypeOutputTextDone, finalOutput),
			stringEvent(api.StandardEventTypeRunCompleted, "finalOutput", finalOutput),
		},
	})
	if err != nil {
		if !x.isStranded() { // else the stranded loop fails it
			x.rt.log.Error("complete execution", "execution", x.id, "err", err)
		}
		return
	}
	x.finished()
}

// failLocked enters failed with run.failed, abandoning a pending action, as one unit; the
// provider's pending RequestAction fails with the same message.
func (x *execution) failLocked(message string) {
	at := now()
	rec := x.wrec
	markFailed(&rec, at, message)
	c := change{
		at:     at,
		rec:    &rec,
		events: []newEvent{{typ: api.StandardEventTypeRunFailed, data: runFailedData(message)}},
	}
	pending := x.abandonPendingAction(&rec, &c)
	if err := x.commit(c); err != nil {
		if !x.isStranded() { // else the stranded loop fails it
			x.rt.log.Error("fail execution", "execution", x.id, "err", err)
		}
		return
	}
	pending.reject(message)
	x.finished()
}

// finished runs after a terminal commit (writeMu held): the execution leaves the live map (reads
// go to the store from now on; subscribers keep their pointer) and the provider context ends.
func (x *execution) finished() {
	// A fast provider can end before its start is settled: leave the live map (and report the
	// end to the observer) only after the execution entered it (and was reported started).
	<-x.admitted
	x.stopRun(errExecutionFinished)
	// Its complete log, if the hot window still holds it, serves reads from now on (before it
	// leaves the live map, so a reader finds it in one place or the other).
	x.mu.RLock()
	if whole, ok := x.log.Whole(); ok {
		x.rt.finishedLogs.add(x.rec, whole)
	}
	x.mu.RUnlock()
	x.rt.live.leave(x)
	x.rt.running.release(x.tenant(), x.id)
	x.rt.observer.ExecutionFinished(x.providerID, x.wrec.Execution.State)
}

var errExecutionFinished = errors.New("execution finished")

// providerErrorMessage is the execution's error message for a provider error; never empty
// (docs/protocol.md §16 item 8: an empty message would violate the schema).
func providerErrorMessage(err error) string {
	msg := err.Error()
	if strings.TrimSpace(msg) == "" {
		return msgEmptyProviderError
	}
	return msg
}

// refuseOverLimit handles the error of a provider change: when it is a limit, the execution
// fails with one run.failed (PROVIDER_ERROR) naming the limit and the provider's context is
// cancelled (its cause is the same error), whatever the provider does with the refusal. While cancelling,
// the cancellation owns the outcome and only the emission is refused. The caller holds
// x.writeMu; err is returned as the provider sees it.
func (x *execution) refuseOverLimit(err error) error {
	if err == nil {
		return nil // the usual case, without errors.As's allocation of its target
	}
	var over *eventLimitExceeded
	if !errors.As(err, &over) {
		return err
	}
	refusal := providerError(over.message)
	if state := x.state(); isTerminalState(state) || state == api.ExecutionStateCancelling {
		return refusal
	}
	x.stopRun(refusal)
	x.failLocked(over.message)
	return refusal
}

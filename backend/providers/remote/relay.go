package remote

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/providers/internal/running"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

var errUpstreamGone = errors.New("upstream gone")

// relayRun is one relay of an upstream execution into a local one.
type relayRun struct {
	p   *Provider
	run *backend.Run
	ctx context.Context // the relay's: carries the contact clock, ends with the relay
	// upstreamID is the upstream execution (fixed; cp is guarded by mu).
	upstreamID string

	mu sync.Mutex
	cp checkpoint

	forwarders sync.WaitGroup
}

// relay follows the upstream execution from cp.After and relays each event once, until the
// upstream's terminal event (or the local execution ends, or the upstream is gone).
func (p *Provider) relay(ctx context.Context, run *backend.Run, e *running.Entry[checkpoint], cp checkpoint) (backend.Result, error) {
	clock := newContactClock()
	relayCtx, stop := context.WithCancelCause(withContactClock(ctx, clock))
	r := &relayRun{p: p, run: run, ctx: relayCtx, upstreamID: cp.UpstreamExecutionID, cp: cp}
	defer func() {
		stop(nil)
		r.forwarders.Wait()
	}()
	go r.watch(stop, clock)

	if err := r.resumeAction(); err != nil {
		return backend.Result{}, err
	}
	for ev, err := range p.up.client.Events(relayCtx, cp.UpstreamExecutionID, cp.After) {
		if err != nil {
			return backend.Result{}, r.streamFailed(ctx, relayCtx, err)
		}
		if result, done, err := r.handle(ev); done {
			return result, err
		}
	}
	// Events ends after the terminal event (handled above) or with an error; an early end
	// without either means the context ended.
	return backend.Result{}, r.streamFailed(ctx, relayCtx, relayCtx.Err())
}

// streamFailed is the execution's error when the upstream stream stopped without a terminal
// event.
func (r *relayRun) streamFailed(ctx, relayCtx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err() // cancelled here, or the runtime is closing: not a failure of ours
	case errors.Is(context.Cause(relayCtx), errUpstreamGone):
		return fmt.Errorf("Upstream %s was unreachable for longer than %s", r.p.up.s.label, r.p.up.s.goneTimeout)
	default:
		return errors.New(r.p.upstreamMessage("stream the execution's events", err))
	}
}

// handle relays one upstream event; done reports the upstream's terminal event (or a local
// refusal that ends the execution).
func (r *relayRun) handle(ev api.RuntimeEvent) (result backend.Result, done bool, err error) {
	r.mu.Lock()
	next := r.cp
	r.mu.Unlock()
	if ev.Sequence <= next.After {
		return backend.Result{}, false, nil // relayed before a restart
	}
	next.After = ev.Sequence
	switch ev.Type {
	case api.StandardEventTypeOutputTextDelta, api.StandardEventTypeProviderEvent:
		// Relayed as the object it is: a provider may add fields of its own.
		var data api.JSONObject
		if data, err = ev.Data.AsProviderEventData(); err == nil {
			handled := false
			if ev.Type == api.StandardEventTypeProviderEvent {
				handled, err = r.relayHarnessEvent(data, next.encode()) // usage.go
			}
			if !handled {
				err = r.run.WithCheckpoint(next.encode()).Emit(ev.Type, data)
			}
		}
	case api.StandardEventTypeArtifactCreated:
		var artifact api.Artifact
		if artifact, err = ev.Data.AsArtifact(); err == nil {
			err = r.run.WithCheckpoint(next.encode()).Emit(ev.Type, artifactDescriptor(artifact))
		}
	case api.StandardEventTypeActionRequired:
		req, decodeErr := ev.Data.AsActionRequest()
		if decodeErr != nil {
			return backend.Result{}, true, fmt.Errorf("Upstream %s sent an undecodable action request", r.p.up.s.label)
		}
		next.UpstreamActionID, next.Answer = req.ID, nil
		var local api.ActionRequest
		local, err = r.run.WithCheckpoint(next.encode()).OpenAction(localAction(req))
		if err == nil {
			r.setCheckpoint(next)
			r.forwardAnswer(local.ID, req.ID)
			return backend.Result{}, false, nil
		}
	case api.StandardEventTypeActionResponded:
		if responded, _ := ev.Data.AsActionRespondedData(); responded.ActionID != "" && responded.ActionID == next.UpstreamActionID {
			r.answeredUpstream(responded)
			next.UpstreamActionID, next.Answer = "", nil
		}
	case api.StandardEventTypeRunCompleted:
		completed, _ := ev.Data.AsRunCompletedData()
		return backend.Result{FinalOutput: completed.FinalOutput}, true, nil
	case api.StandardEventTypeRunFailed:
		failed, _ := ev.Data.AsRunFailedData()
		return backend.Result{}, true, fmt.Errorf("Upstream %s failed the execution: %s", r.p.up.s.label, failed.Message)
	case api.StandardEventTypeRunCancelled:
		message := fmt.Sprintf("Upstream %s cancelled the execution", r.p.up.s.label)
		if cancelled, _ := ev.Data.AsRunCancelledData(); cancelled.Reason != nil && *cancelled.Reason != "" {
			message += ": " + *cancelled.Reason
		}
		return backend.Result{}, true, errors.New(message)
	default:
		// run.queued, run.started, output.text.done: the local runtime writes its own.
	}
	if err != nil {
		return backend.Result{}, true, err
	}
	r.setCheckpoint(next)
	return backend.Result{}, false, nil
}

func (r *relayRun) setCheckpoint(cp checkpoint) {
	r.mu.Lock()
	r.cp = cp
	r.mu.Unlock()
}

// answeredUpstream handles the upstream's action.responded for the action behind the local
// pending one: normally the echo of the answer forwarded from here; if the local action is
// still pending, someone answered at the upstream directly, and the local action is resolved
// the same way (approved, and the decision and its parts when the upstream says them; an input
// value given there is not known here).
func (r *relayRun) answeredUpstream(data api.ActionRespondedData) {
	local, pending := r.run.PendingAction()
	if !pending {
		return // answered here (this is the echo of the forwarded answer)
	}
	response := api.ActionResponse{Approved: data.Approved, Decision: data.Decision, OptionID: data.OptionID,
		Message: data.Message, Arguments: data.Arguments}
	r.mu.Lock()
	r.cp.UpstreamActionID = "" // forwardAnswer must not send the local copy back upstream
	r.mu.Unlock()
	if err := r.run.ResolveAction(r.ctx, local.ID, response); err != nil {
		r.p.up.log.Info("resolve an action answered at the upstream", "execution", r.run.ExecutionID(), "error", err)
	}
}

// resumeAction re-arms the forwarding of an action answer after a restart.
func (r *relayRun) resumeAction() error {
	cp := r.cp
	if cp.UpstreamActionID == "" {
		return nil
	}
	if local, pending := r.run.PendingAction(); pending {
		r.forwardAnswer(local.ID, cp.UpstreamActionID)
		return nil
	}
	if cp.Answer != nil {
		r.forwarders.Add(1)
		go func() {
			defer r.forwarders.Done()
			r.forward(cp.UpstreamActionID, *cp.Answer)
		}()
		return nil
	}
	// Answered here, but the edge stopped before the answer was recorded for forwarding: if the
	// upstream saw no answer either, it waits for one nobody will send.
	answered, err := r.upstreamAnswered(cp.UpstreamActionID, cp.After)
	if err != nil {
		return errors.New(r.p.upstreamMessage("list the execution's events", err))
	}
	if !answered {
		return fmt.Errorf("The answer to action %s was accepted but the edge restarted before forwarding it to upstream %s; cancel and start again", cp.UpstreamActionID, r.p.up.s.label)
	}
	return nil
}

func (r *relayRun) upstreamAnswered(upstreamActionID string, after int64) (bool, error) {
	for {
		ctx, cancel := r.p.up.call(r.ctx)
		page, err := r.p.up.client.ListEvents(ctx, r.upstreamID, after, 0)
		cancel()
		if err != nil {
			return false, err
		}
		if len(page.Events) == 0 {
			return false, nil
		}
		for _, ev := range page.Events {
			if ev.Type != api.StandardEventTypeActionResponded {
				continue
			}
			if responded, _ := ev.Data.AsActionRespondedData(); responded.ActionID == upstreamActionID {
				return true, nil
			}
		}
		after = page.NextCursor
	}
}

// forwardAnswer waits for the local answer to localID and forwards it upstream.
func (r *relayRun) forwardAnswer(localID, upstreamActionID string) {
	r.forwarders.Add(1)
	go func() {
		defer r.forwarders.Done()
		response, err := r.run.AwaitAction(r.ctx, localID)
		if err != nil {
			return // aborted: the cancellation or failure takes care of the upstream
		}
		r.mu.Lock()
		if r.cp.UpstreamActionID != upstreamActionID {
			r.mu.Unlock()
			return // resolved from the upstream's side (answeredUpstream)
		}
		r.cp.Answer = &response
		cp := r.cp
		r.mu.Unlock()
		if err := r.run.SaveCheckpoint(cp.encode()); err != nil {
			r.p.up.log.Error("record an action answer before forwarding it", "execution", r.run.ExecutionID(), "error", err)
		}
		r.forward(upstreamActionID, response)
	}()
}

// forward sends the answer upstream until it is accepted (or found already applied: the SDK
// retries a respond whose answer was lost), or the relay ends.
func (r *relayRun) forward(upstreamActionID string, response api.ActionResponse) {
	wait := 200 * time.Millisecond
	for r.ctx.Err() == nil {
		ctx, cancel := r.p.up.call(r.ctx)
		_, err := r.p.up.client.RespondToAction(ctx, r.upstreamID, upstreamActionID, response)
		cancel()
		switch {
		case err == nil:
			return
		case errors.Is(err, sdk.ErrActionAlreadyResolved), errors.Is(err, sdk.ErrActionNotFound), errors.Is(err, sdk.ErrInvalidState):
			// Applied by an earlier try, answered at the upstream, or the upstream moved on
			// (cancelled, failed): its events say what happened next.
			r.p.up.log.Info("upstream did not take the forwarded answer", "execution", r.run.ExecutionID(), "upstreamAction", upstreamActionID, "error", err)
			return
		}
		r.p.up.log.Debug("forwarding an answer upstream failed; retrying", "execution", r.run.ExecutionID(), "error", err)
		select {
		case <-r.ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// watch fails the relay when the upstream has been silent for longer than the gone timeout.
// Halfway there it asks the upstream for the execution: an idle stream of an upstream that
// sends no heartbeats is not a gone upstream.
func (r *relayRun) watch(stop context.CancelCauseFunc, clock *contactClock) {
	gone := r.p.up.s.goneTimeout
	ticker := time.NewTicker(max(gone/20, 10*time.Millisecond))
	defer ticker.Stop()
	var probing atomic.Bool
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-ticker.C:
		}
		silent := clock.silentFor()
		if silent > gone {
			stop(errUpstreamGone)
			return
		}
		if silent > gone/2 && probing.CompareAndSwap(false, true) {
			go func() {
				defer probing.Store(false)
				ctx, cancel := context.WithTimeout(r.ctx, gone/2)
				defer cancel()
				_, _ = r.p.up.client.GetExecution(ctx, r.upstreamID)
			}()
		}
	}
}

// artifactDescriptor is the upstream Artifact as a descriptor for a local one: id, name,
// mediaType, uri and metadata as given; the execution id and time become the local ones.
func artifactDescriptor(a api.Artifact) api.JSONObject {
	out := api.JSONObject{"id": a.ID, "name": a.Name, "mediaType": a.MediaType}
	if a.URI != nil {
		out["uri"] = *a.URI
	}
	if a.Metadata != nil {
		out["metadata"] = a.Metadata
	}
	return out
}

// localAction is the local copy of an upstream action: what the reference has, and what an
// upstream harness-edge adds (its agent's options, the editable arguments, the tool kind), so a
// typed answer is checked here as the upstream will check it and forwarded as given. The
// upstream's expiresAt is not copied: the local action expires by this edge's own settings (the
// upstream's expiry, if first, answers it from there: answeredUpstream).
func localAction(req api.ActionRequest) backend.ActionInput {
	in := backend.ActionInput{Kind: req.Kind, Title: req.Title, Description: req.Description, Payload: req.Payload}
	if req.Options != nil {
		in.Options = *req.Options
	}
	if req.Arguments != nil {
		in.Arguments = *req.Arguments
	}
	if req.ToolKind != nil {
		in.ToolKind = *req.ToolKind
	}
	return in
}

package acp

import (
	"context"
	"errors"
	"strings"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// turn is one execution: one prompt on its conversation's session. It owns what belongs to the
// execution — its events, its output, its approval actions, its failure — while the session
// (session.go) owns the process, which may outlive the turn and serve the conversation's next
// one (pool.go).
type turn struct {
	p            *Provider
	run          *backend.Run
	conversation string

	// stopping ends when the turn ends, so that permission requests still waiting for the
	// caller (or for their turn), and a wait for a free process, stop waiting. The permission
	// requests' "cancelled" answers reach the agent from the boundary (cancelPendingPermissions),
	// not from here: the handlers' come too late.
	stopping context.Context
	stop     context.CancelFunc

	mu       sync.Mutex
	session  *session // the process serving the turn; nil until one is adopted
	ended    bool     // end began: no process may be adopted any more
	answered bool     // the agent answered session/prompt (whatever the stop reason)

	failOnce sync.Once
	failed   chan struct{} // closed by the first failure
	failure  error

	actionSlot chan struct{} // capacity 1: one approval action at a time

	// emitMu orders emissions against the end of Run: handlers emit under the read lock, and Run
	// seals under the write lock, so nothing is emitted (or asked) after Run has returned.
	emitMu sync.RWMutex
	sealed bool

	outputMu sync.Mutex
	output   strings.Builder

	traceCtx context.Context // Run's context, parent of the turn's spans (tracing.go)

	usage turnUsage // what the agent reported of its usage (usage.go)

	conversed chan struct{} // closed when converse has returned

	endOnce sync.Once
	endDone chan struct{}
	endErr  error
}

func newTurn(p *Provider, run *backend.Run) *turn {
	stopping, stop := context.WithCancel(context.Background())
	t := &turn{
		p:          p,
		run:        run,
		stopping:   stopping,
		stop:       stop,
		failed:     make(chan struct{}),
		actionSlot: make(chan struct{}, 1),
		conversed:  make(chan struct{}),
		endDone:    make(chan struct{}),
	}
	if run != nil {
		t.conversation = run.ConversationID()
	}
	return t
}

func (t *turn) executionID() string { return t.run.ExecutionID() }

// execute runs the execution to its end: it waits for the conversation's earlier executions on
// this provider (one turn at a time on a session), gets a process — the conversation's warm
// one, or a new one that continues the stored session — prompts it, and hands the process back
// to the pool or tears it down (end).
func (t *turn) execute(ctx context.Context) (backend.Result, error) {
	runCtx, cancel := context.WithTimeout(ctx, t.p.settings.runTimeout)
	defer cancel()
	t.traceCtx = ctx

	release, err := conversationLanes.take(runCtx, laneKey(t.p.settings.id, t.conversation), t.executionID(), t.waitingForConversation)
	if err != nil {
		t.seal()
		if ctx.Err() != nil {
			return backend.Result{}, ctx.Err()
		}
		t.fail(errRunTimeout)
		return backend.Result{}, errAgentRequestFailed
	}
	defer release() // after end: the next turn finds the process warm, or gone

	work := make(chan error, 1)
	go func() {
		err := t.converse()
		close(t.conversed)
		work <- err
	}()

	var turnErr error
	finished := false
	select {
	case turnErr = <-work:
		finished = true
	case <-t.failed:
	case <-runCtx.Done():
		if ctx.Err() == nil {
			t.fail(errRunTimeout)
		}
	}
	closeErr := t.end()
	if !finished {
		turnErr = <-work // the turn is over now, so every call it waits on has returned
	}
	t.seal()

	// The turn's own result decides: converse already gave way to any failure recorded before
	// the agent's answer, and a failure after a completed turn changes nothing.
	switch {
	case ctx.Err() != nil:
		return backend.Result{}, ctx.Err() // cancelled: the runtime's cancellation owns the outcome
	case turnErr != nil:
		t.fail(turnErr)
		var refused *workspaceError
		if errors.As(turnErr, &refused) {
			// The harness's own refusal, before any agent ran: its message says what the
			// operator must look at (the full path goes to the server's log only).
			t.p.logRefusal(t.executionID(), refused)
			return backend.Result{}, refused
		}
		return backend.Result{}, errAgentRequestFailed
	case closeErr != nil:
		return backend.Result{}, closeErr
	}
	return backend.Result{FinalOutput: t.outputText()}, nil
}

// converse is the turn on the wire: a process (obtain), its native session (attach), then
// session/prompt with the input as one text block. Its calls end when the agent answers or the
// connection closes (teardown closes it); waits end with the turn (stopping).
func (t *turn) converse() error {
	s, stored, warm, err := t.obtain()
	if err != nil {
		return err
	}
	if err := t.attach(s, stored, warm); err != nil {
		return err
	}
	return t.prompt(s)
}

// prompt sends the input and waits for the end of the turn.
func (t *turn) prompt(s *session) error {
	s.promptInFlight.Store(true)
	span := s.rpcSpan(acpsdk.AgentMethodSessionPrompt, trace.SpanKindClient) // the prompt turn
	answer, err := acpsdk.SendRequest[acpsdk.PromptResponse](s.conn, context.Background(), acpsdk.AgentMethodSessionPrompt,
		acpsdk.PromptRequest{SessionId: s.native(), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(t.run.Input())}})
	endRPCSpan(span, err, attribute.String("acp.stop_reason", string(answer.StopReason)))
	s.promptInFlight.Store(false)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.answered = true
	t.mu.Unlock()
	// Every notification sent before the answer has been handled (the SDK's ordering barrier),
	// so a violation among them is recorded by now and must win over the answer.
	if failure := t.failureCause(); failure != nil {
		return failure
	}
	if answer.Usage != nil {
		t.usage.answered(answer.Usage)
	}
	if err := t.reportUsage(); err != nil {
		return err
	}
	if t.usage.hasCost() {
		// The session's cost as of this turn's end, the next turn's baseline.
		if err := t.saveState(t.usage.carry(conversationState{SessionID: string(s.native()), Cwd: s.cwd, Execution: t.executionID()})); err != nil {
			return err
		}
	}
	if answer.StopReason == acpsdk.StopReasonCancelled {
		return errTurnCancelled
	}
	return t.emitNative("turn.completed", api.JSONObject{"stopReason": string(answer.StopReason)})
}

// adopt makes s the turn's process, unless the turn already ended.
func (t *turn) adopt(s *session) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return false
	}
	t.session = s
	s.attachTurn(t)
	return true
}

// end finishes the turn once, whoever asks first (the end of Run, a failure, the run timeout,
// the runtime's cancellation or the Cancel hook), and returns the shared result: nil when the
// process was handed back warm or confirmed gone.
func (t *turn) end() error {
	t.endOnce.Do(func() {
		go func() {
			t.endErr = t.finish()
			close(t.endDone)
		}()
	})
	<-t.endDone
	return t.endErr
}

// endWithin is end for a caller with its own deadline (the Cancel hook): the end goes on after
// the caller gives up, but the caller learns that closure was not confirmed in time.
func (t *turn) endWithin(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- t.end() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return errClosureUnconfirmed
	}
}

// finish decides what becomes of the process. A turn still running is ended the ACP way:
// pending permission requests answered cancelled, then session/cancel. An agent that has
// answered the prompt (within the shutdown grace, when it had to be cancelled) and broke no
// rule keeps its process for the conversation's next turn; any other is torn down (teardown.go):
// an agent that does not end its turn when asked cannot be trusted with the next one.
func (t *turn) finish() error {
	t.stop()
	t.mu.Lock()
	t.ended = true
	s := t.session
	t.mu.Unlock()
	if s == nil {
		return nil // ended before a process was adopted: nothing to hand back
	}
	grace := t.p.settings.shutdownGrace
	if !isClosed(t.conversed) && s.promptInFlight.Load() && s.healthy() {
		s.cancelPermissions(grace)
		s.sendSessionCancel(grace)
		waitAtMost(t.conversed, grace)
	}
	t.mu.Lock()
	answered := t.answered
	t.mu.Unlock()
	s.detachTurn(t)
	if isClosed(t.conversed) && answered && s.healthy() {
		s.reopen()
		t.p.pool.checkin(t.conversation, s)
		return nil
	}
	return t.p.pool.retire(s)
}

// fail records the first failure of the execution and wakes execute. Later failures are
// consequences of the first and are dropped.
func (t *turn) fail(cause error) {
	t.failOnce.Do(func() {
		t.failure = cause
		close(t.failed)
		t.p.observe.failed(t.executionID(), cause)
	})
}

func (t *turn) failureCause() error {
	select {
	case <-t.failed:
		return t.failure
	default:
		return nil
	}
}

// emitNative emits a provider.event unless Run has already returned.
func (t *turn) emitNative(method string, params api.JSONObject) error {
	t.emitMu.RLock()
	defer t.emitMu.RUnlock()
	if t.sealed {
		return nil
	}
	return t.run.Emit(api.StandardEventTypeProviderEvent, api.JSONObject{
		"provider": providerEventSource,
		"method":   method,
		"params":   params,
	})
}

// waitingForConversation tells the caller why the execution does not start at once: another
// execution of its conversation has the session (ACP sessions take one prompt at a time).
func (t *turn) waitingForConversation(holder string) {
	params := api.JSONObject{"for": "conversation"}
	if holder != "" {
		params["executionId"] = holder
	}
	_ = t.emitNative("turn.waiting", params)
}

// waitingForProcess tells the caller that every agent process this provider may run is busy.
func (t *turn) waitingForProcess() {
	_ = t.emitNative("turn.waiting", api.JSONObject{"for": "process", "maxProcesses": t.p.settings.maxProcesses})
}

// seal makes later emissions and permission requests no-ops; it waits for those in progress.
func (t *turn) seal() {
	t.emitMu.Lock()
	t.sealed = true
	t.emitMu.Unlock()
}

func (t *turn) appendOutput(text string) {
	t.outputMu.Lock()
	defer t.outputMu.Unlock()
	t.output.WriteString(text)
}

func (t *turn) outputText() string {
	t.outputMu.Lock()
	defer t.outputMu.Unlock()
	return t.output.String()
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

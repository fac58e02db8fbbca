package acp

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// providerEventSource is the "provider" member of every provider.event this adapter emits.
const providerEventSource = "acp"

// session is one execution: one agent process, one ACP connection, one native session, one turn.
type session struct {
	settings *settings
	run      *backend.Run
	observe  observer

	// stopping ends when teardown begins, so that permission requests still waiting for the
	// caller (or for their turn) stop waiting. Their "cancelled" answers reach the agent from
	// the boundary (cancelPendingPermissions), not from here: the handlers' come too late.
	stopping context.Context
	stop     context.CancelFunc

	mu      sync.Mutex
	proc    *agentProcess // nil until spawned
	stopped bool          // teardown began: nothing may be spawned any more

	wire     *boundary
	conn     *acpsdk.Connection
	fromWire *io.PipeReader // what the SDK reads: checked lines from the boundary

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

	sessionID      acpsdk.SessionId
	promptInFlight atomic.Bool

	traceCtx context.Context // Run's context, parent of the session's spans (tracing.go)

	teardownOnce sync.Once
	teardownDone chan struct{}
	teardownErr  error
}

func newSession(s *settings, run *backend.Run, observe observer) *session {
	stopping, stop := context.WithCancel(context.Background())
	return &session{
		settings:     s,
		run:          run,
		observe:      observe,
		stopping:     stopping,
		stop:         stop,
		failed:       make(chan struct{}),
		actionSlot:   make(chan struct{}, 1),
		teardownDone: make(chan struct{}),
	}
}

// execute runs the execution to its end and always leaves the agent torn down and reaped (or
// reports that it could not confirm it).
func (s *session) execute(ctx context.Context) (backend.Result, error) {
	runCtx, cancel := context.WithTimeout(ctx, s.settings.runTimeout)
	defer cancel()
	s.traceSession(ctx)

	if err := s.spawn(); err != nil {
		s.fail(err)
		s.shutdown()
		s.seal()
		if ctx.Err() != nil {
			return backend.Result{}, ctx.Err()
		}
		return backend.Result{}, errAgentRequestFailed
	}

	turn := make(chan error, 1)
	go func() { turn <- s.converse() }()

	var turnErr error
	finished := false
	select {
	case turnErr = <-turn:
		finished = true
	case <-s.failed:
	case <-runCtx.Done():
		if ctx.Err() == nil {
			s.fail(errRunTimeout)
		}
	}
	closeErr := s.shutdown()
	if !finished {
		turnErr = <-turn // the connection is closed now, so every pending call has returned
	}
	s.seal()

	// The turn's own result decides: converse already gave way to any failure recorded before
	// the agent's answer, and a failure after a completed turn changes nothing.
	switch {
	case ctx.Err() != nil:
		return backend.Result{}, ctx.Err() // cancelled: the runtime's cancellation owns the outcome
	case turnErr != nil:
		s.fail(turnErr)
		return backend.Result{}, errAgentRequestFailed
	case closeErr != nil:
		return backend.Result{}, closeErr
	}
	return backend.Result{FinalOutput: s.outputText()}, nil
}

// spawn starts the agent and the ACP connection over its stdio, unless teardown already began
// (a cancellation that won the race with the start).
func (s *session) spawn() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return context.Canceled
	}
	proc, err := startAgentProcess(s.settings, s.agentEnv())
	if err != nil {
		return errAgentUnavailable
	}
	s.proc = proc
	s.observe.spawned(s.run.ExecutionID(), proc.pid())

	fromWire, toSDK := io.Pipe()
	s.fromWire = fromWire
	s.wire = newBoundary(s.settings, proc.stdin, s.fail)
	s.conn = acpsdk.NewConnection(s.handle, s.wire, fromWire)
	// The SDK logs raw inbound lines on errors; they are agent output and must go nowhere.
	s.conn.SetLogger(slog.New(slog.DiscardHandler))
	go s.wire.pump(proc.stdout, toSDK)
	return nil
}

// initializeParams is written out rather than taken from acpsdk.InitializeRequest so that the
// capabilities we refuse are explicit false on the wire, as the reference sends them.
type initializeParams struct {
	ProtocolVersion    acpsdk.ProtocolVersion `json:"protocolVersion"`
	ClientCapabilities struct {
		FS struct {
			ReadTextFile  bool `json:"readTextFile"`
			WriteTextFile bool `json:"writeTextFile"`
		} `json:"fs"`
		Terminal bool `json:"terminal"`
	} `json:"clientCapabilities"`
	ClientInfo acpsdk.Implementation `json:"clientInfo"`
}

// converse is the wire sequence: initialize → session/new → session/prompt. Its calls end when
// the agent answers or the connection closes (teardown closes it), so it needs no context of
// its own beyond the initialization bound.
func (s *session) converse() error {
	params := initializeParams{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		ClientInfo:      acpsdk.Implementation{Name: "harness-edge", Version: "0.2.0"},
	}
	initCtx, cancelInit := context.WithTimeout(context.Background(), s.settings.initializationTimeout)
	initialized, err := sendRequest[acpsdk.InitializeResponse](s, initCtx, acpsdk.AgentMethodInitialize, params)
	cancelInit()
	if err != nil {
		return err
	}
	if initialized.ProtocolVersion != acpsdk.ProtocolVersionNumber {
		return errProtocolVersion
	}

	created, err := sendRequest[acpsdk.NewSessionResponse](s, context.Background(), acpsdk.AgentMethodSessionNew,
		acpsdk.NewSessionRequest{Cwd: s.settings.cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		return err
	}
	if created.SessionId == "" {
		return errNoSession
	}
	s.mu.Lock()
	s.sessionID = created.SessionId
	s.mu.Unlock()

	s.promptInFlight.Store(true)
	turn := s.rpcSpan(acpsdk.AgentMethodSessionPrompt, trace.SpanKindClient) // the prompt turn
	answer, err := acpsdk.SendRequest[acpsdk.PromptResponse](s.conn, context.Background(), acpsdk.AgentMethodSessionPrompt,
		acpsdk.PromptRequest{SessionId: created.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(s.run.Input())}})
	endRPCSpan(turn, err, attribute.String("acp.stop_reason", string(answer.StopReason)))
	s.promptInFlight.Store(false)
	if err != nil {
		return err
	}
	// Every notification sent before the answer has been handled (the SDK's ordering barrier),
	// so a violation among them is recorded by now and must win over the answer.
	if failure := s.failureCause(); failure != nil {
		return failure
	}
	if answer.StopReason == acpsdk.StopReasonCancelled {
		return errTurnCancelled
	}
	return s.emitNative("turn.completed", api.JSONObject{"stopReason": string(answer.StopReason)})
}

// emitNative emits a provider.event unless Run has already returned.
func (s *session) emitNative(method string, params api.JSONObject) error {
	s.emitMu.RLock()
	defer s.emitMu.RUnlock()
	if s.sealed {
		return nil
	}
	return s.run.Emit(api.StandardEventTypeProviderEvent, api.JSONObject{
		"provider": providerEventSource,
		"method":   method,
		"params":   params,
	})
}

// fail records the first failure of the execution and wakes execute. Later failures are
// consequences of the first and are dropped.
func (s *session) fail(cause error) {
	s.failOnce.Do(func() {
		s.failure = cause
		close(s.failed)
		s.observe.failed(s.run.ExecutionID(), cause)
	})
}

func (s *session) failureCause() error {
	select {
	case <-s.failed:
		return s.failure
	default:
		return nil
	}
}

// seal makes later emissions and permission requests no-ops; it waits for those in progress.
func (s *session) seal() {
	s.emitMu.Lock()
	s.sealed = true
	s.emitMu.Unlock()
}

func (s *session) appendOutput(text string) {
	s.outputMu.Lock()
	defer s.outputMu.Unlock()
	s.output.WriteString(text)
}

func (s *session) outputText() string {
	s.outputMu.Lock()
	defer s.outputMu.Unlock()
	return s.output.String()
}

package acp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	acpsdk "github.com/coder/acp-go-sdk"
)

// providerEventSource is the "provider" member of every provider.event this adapter emits.
const providerEventSource = "acp"

// session is one agent process, the ACP connection over its stdio and, once attached, one
// native ACP session. It serves the turns of one conversation one after another for as long as
// it stays warm (pool.go); each turn is one execution (turn.go). The agent's updates and
// requests go to the turn in progress; between turns there is none, and they go nowhere.
type session struct {
	settings *settings
	observe  observer
	cwd      string // the process's working directory and the ACP session's cwd
	owner    string // the execution that spawned it ("probe" for the capability probe): the observer's key

	mu            sync.Mutex
	proc          *agentProcess // nil until spawned
	stopped       bool          // teardown began: nothing may be spawned any more
	current       *turn         // the turn the agent's messages belong to; nil between turns
	replaying     bool          // session/load is replaying history: updates are not output
	replayed      int           // updates replayed by the last session/load
	sessionID     acpsdk.SessionId
	lastExecution string            // the execution this native session last served (continuity.go)
	caps          agentCapabilities // what the agent answered to initialize

	wire     *boundary
	conn     *acpsdk.Connection
	fromWire *io.PipeReader // what the SDK reads: checked lines from the boundary

	// broken closes on the first sign that the process cannot be trusted with another turn: a
	// protocol violation, a lost connection, an answer that makes no sense. The turn in
	// progress fails with the cause; the process is torn down, never kept warm.
	brokenOnce  sync.Once
	broken      chan struct{}
	brokenCause error

	promptInFlight atomic.Bool
	cancelSent     atomic.Bool // session/cancel went out for the turn in progress
	retired        atomic.Bool // the pool has counted this process out (pool.go)

	teardownOnce sync.Once
	teardownDone chan struct{}
	teardownErr  error
}

func newSession(s *settings, observe observer, cwd, owner string) *session {
	return &session{
		settings:     s,
		observe:      observe,
		cwd:          cwd,
		owner:        owner,
		broken:       make(chan struct{}),
		teardownDone: make(chan struct{}),
	}
}

// spawn starts the agent and the ACP connection over its stdio, unless teardown already began.
// env is the agent's environment (the configured one, with the spawning execution's trace
// context: tracing.go).
func (s *session) spawn(env []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return context.Canceled
	}
	proc, err := startAgentProcess(s.settings, s.cwd, env)
	if err != nil {
		// The OS error stays inside the adapter (the probe logs it); executions say only
		// "ACP agent request failed".
		return fmt.Errorf("%w: %v", errAgentUnavailable, err)
	}
	s.proc = proc
	s.observe.spawned(s.owner, proc.pid())

	fromWire, toSDK := io.Pipe()
	s.fromWire = fromWire
	s.wire = newBoundary(s.settings, proc.stdin, s.breakDown)
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

// initialize is the handshake, bounded by the initialization timeout (and ctx): protocol 1, and
// what the agent can do to continue a session (capabilities.go).
func (s *session) initialize(ctx context.Context) (agentCapabilities, error) {
	params := initializeParams{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		ClientInfo:      acpsdk.Implementation{Name: "harness-edge", Version: "0.2.0"},
	}
	initCtx, cancel := context.WithTimeout(ctx, s.settings.initializationTimeout)
	defer cancel()
	initialized, err := sendRequest[acpsdk.InitializeResponse](s, initCtx, acpsdk.AgentMethodInitialize, params)
	if err != nil {
		return agentCapabilities{}, err
	}
	if initialized.ProtocolVersion != acpsdk.ProtocolVersionNumber {
		return agentCapabilities{}, errProtocolVersion
	}
	caps := capabilitiesOf(initialized.AgentCapabilities)
	s.mu.Lock()
	s.caps = caps
	s.mu.Unlock()
	return caps, nil
}

// breakDown records the first reason the process cannot be trusted any more and fails the turn
// in progress with it. Later causes are consequences of the first and are dropped.
func (s *session) breakDown(cause error) {
	s.brokenOnce.Do(func() {
		s.brokenCause = cause
		close(s.broken)
	})
	if t := s.turn(); t != nil {
		t.fail(cause)
	}
}

// healthy reports whether the process may serve another turn: nothing broke, the agent has
// not exited, and teardown has not begun.
func (s *session) healthy() bool {
	select {
	case <-s.broken:
		return false
	default:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.proc == nil {
		return false
	}
	select {
	case <-s.proc.exited:
		return false
	case <-s.conn.Done():
		return false
	default:
		return true
	}
}

func (s *session) brokenReason() error {
	select {
	case <-s.broken:
		return s.brokenCause
	default:
		return nil
	}
}

// reopen readies a process whose turn ended cleanly for the conversation's next turn.
func (s *session) reopen() {
	s.wire.reopen()
	s.cancelSent.Store(false)
}

// attachTurn makes t the turn the agent's messages belong to.
func (s *session) attachTurn(t *turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current = t
}

// detachTurn ends t's hold on the agent's messages: later ones go nowhere.
func (s *session) detachTurn(t *turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == t {
		s.current = nil
	}
}

func (s *session) turn() *turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current
}

// native is the attached native session ("" before session/new, resume or load answered).
func (s *session) native() acpsdk.SessionId {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessionID
}

func (s *session) setNative(id acpsdk.SessionId, execution string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessionID, s.lastExecution = id, execution
}

func (s *session) servedLast() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastExecution
}

func (s *session) capabilities() agentCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

// exited closes when the agent process has been reaped (never, before spawn).
func (s *session) exited() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	return s.proc.exited
}

func (s *session) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.pid()
}

package acp

import (
	"context"
	"sync"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Provider runs each execution as one ACP agent subprocess. It implements backend.Provider and
// backend.Canceler; New returns it as a backend.Provider.
type Provider struct {
	settings *settings

	mu       sync.Mutex
	sessions map[string]*session // execution id → its running session

	observe observer
}

var (
	_ backend.Provider = (*Provider)(nil)
	_ backend.Canceler = (*Provider)(nil)
)

// New validates the trusted configuration and returns the provider. Nothing is spawned until an
// execution runs.
func New(cfg Config) (backend.Provider, error) {
	s, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	return &Provider{settings: s, sessions: make(map[string]*session)}, nil
}

// Manifest is the ACP manifest of docs/protocol.md §10.4 under the configured id.
func (p *Provider) Manifest() api.ProviderManifest { return manifest(p.settings.id) }

// Run spawns the agent, runs one prompt turn with the execution's input and returns the
// concatenated agent text. Every failure is the generic errAgentRequestFailed.
func (p *Provider) Run(ctx context.Context, run *backend.Run) (backend.Result, error) {
	if len(run.Config()) != 0 {
		return backend.Result{}, errExecutionConfigNotEmpty
	}
	id := run.ExecutionID()
	s := newSession(p.settings, run, p.observe)
	if !p.register(id, s) {
		return backend.Result{}, errAlreadyRunning
	}
	defer p.unregister(id, s)
	// The runtime cancels ctx before it calls Cancel. Registering first and checking ctx after
	// means a Cancel that found no session is always followed by this check seeing the
	// cancellation, so no agent is ever spawned behind a cancellation's back.
	if ctx.Err() != nil {
		return backend.Result{}, ctx.Err()
	}
	return s.execute(ctx)
}

// Cancel is the runtime's cleanup hook: it tears the execution's agent down (session/cancel,
// then stdin close → SIGTERM → SIGKILL) and fails with "ACP process closure was not confirmed" when
// the child's exit could not be confirmed within the ladder or ctx. An execution with no agent
// (never started, or already finished) has nothing to clean up.
func (p *Provider) Cancel(ctx context.Context, executionID string, _ string) error {
	p.mu.Lock()
	s := p.sessions[executionID]
	p.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.shutdownWithin(ctx)
}

func (p *Provider) register(id string, s *session) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, running := p.sessions[id]; running {
		return false
	}
	p.sessions[id] = s
	return true
}

func (p *Provider) unregister(id string, s *session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sessions[id] == s {
		delete(p.sessions, id)
	}
}

// observer lets tests see what the portable errors hide: which child was spawned (to check it
// was reaped) and why an execution failed; and lets them hold the recording of session/updates
// to make a race with a permission request certain (order_test.go). The zero value observes
// nothing.
type observer struct {
	onSpawn   func(executionID string, pid int)
	onFailure func(executionID string, cause error)
	onExit    func(executionID string, status string) // the reaped child's wait status
	// onUpdate is called on the SDK's notification goroutine as a session/update is about to be
	// recorded; the update waits for it to return.
	onUpdate func(executionID string)
	// onAwaitUpdates is called when a permission request starts waiting for the updates sent
	// before it to be recorded (ordering.go).
	onAwaitUpdates func(executionID string)
}

func (o observer) spawned(executionID string, pid int) {
	if o.onSpawn != nil {
		o.onSpawn(executionID, pid)
	}
}

func (o observer) failed(executionID string, cause error) {
	if o.onFailure != nil {
		o.onFailure(executionID, cause)
	}
}

func (o observer) updating(executionID string) {
	if o.onUpdate != nil {
		o.onUpdate(executionID)
	}
}

func (o observer) awaitingUpdates(executionID string) {
	if o.onAwaitUpdates != nil {
		o.onAwaitUpdates(executionID)
	}
}

func (o observer) exited(executionID string, status string) {
	if o.onExit != nil {
		o.onExit(executionID, status)
	}
}

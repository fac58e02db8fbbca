package acp

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/providers/internal/discovery"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Provider runs ACP agents as subprocesses: each conversation's executions are turns on one
// native ACP session, served by a process kept warm between them (pool.go) and continued in a
// new process when the warm one is gone (continuity.go). It implements backend.Provider,
// backend.Canceler and backend.ConversationForgetter.
type Provider struct {
	settings   *settings
	pool       *pool
	workspaces *workspaces                 // the conversation root held open; nil without conversation_root
	log        atomic.Pointer[slog.Logger] // Start's logger: refused working directories are logged

	// learned is the agent's answer to the capability probe (Start); nil until it answered.
	learned   atomic.Pointer[agentCapabilities]
	discovery *discovery.Discovery // the probe, retried in the background; nil before Start

	mu       sync.Mutex
	turns    map[string]*turn // execution id → its turn in progress
	watchers []func()

	observe observer
}

var (
	_ backend.Provider              = (*Provider)(nil)
	_ backend.Canceler              = (*Provider)(nil)
	_ backend.ConversationForgetter = (*Provider)(nil)
)

// New validates the trusted configuration and returns the provider. Nothing is spawned until
// Start probes the agent or an execution runs.
func New(cfg Config) (*Provider, error) {
	s, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	p := &Provider{settings: s, pool: newPool(s.maxProcesses, s.idleTimeout), turns: make(map[string]*turn)}
	if s.conversationRoot != "" {
		p.workspaces = &workspaces{path: s.conversationRoot}
	}
	return p, nil
}

// Start learns from the agent, by an initialize probe, whether it can continue a session in a
// new process, so that the manifest says what the agent can do (manifest.go). Start waits for
// the answer at most the initialization timeout, and no more than its default (10s): a start or
// reload of the server should not wait for a first `npx` download. If the agent does not answer
// in that time, Start returns nil, the manifest declares continuity unsupported, and the probe
// goes on in the background with capped backoff until the agent answers; the Watch callbacks
// then run. An agent that answers with another ACP protocol version can never serve an
// execution: Start returns that error.
//
// Before the probe, Start makes the conversation root the server's alone (workspace.go):
// created 0700, or tightened to 0700 when the server's user owns it. A root that cannot be made
// so — another user's, or one that cannot be created — refuses to start.
func (p *Provider) Start(ctx context.Context, log *slog.Logger) error {
	if log != nil {
		p.log.Store(log)
	}
	if p.workspaces != nil {
		if err := p.workspaces.open(); err != nil {
			var refused *workspaceError
			if errors.As(err, &refused) {
				return refused.detail // the operator's error: it names the path
			}
			return err
		}
	}
	final := func(err error) bool { return errors.Is(err, errProtocolVersion) }
	d := discovery.New(discovery.Config{
		Read:         p.probe,
		Final:        final,
		GiveUp:       final,
		FirstTimeout: min(p.settings.initializationTimeout, DefaultInitializationTimeout),
		RetryTimeout: p.settings.initializationTimeout,
		Log:          log,
		What:         "the ACP agent's capabilities (initialize)",
		Attrs:        []any{"provider", p.settings.id, "command", p.settings.command},
	})
	d.Watch(p.notify)
	p.mu.Lock()
	p.discovery = d
	p.mu.Unlock()
	return d.Start(ctx)
}

// Watch registers changed, called (on another goroutine) when the manifest changes: the probe
// answered after Start returned.
func (p *Provider) Watch(changed func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.watchers = append(p.watchers, changed)
}

func (p *Provider) notify() {
	p.mu.Lock()
	watchers := slices.Clone(p.watchers)
	p.mu.Unlock()
	for _, changed := range watchers {
		changed()
	}
}

// Close stops the background probe and ends every warm agent process, waiting until they are
// gone; a process busy with a turn ends when its turn does. Executions in progress go on.
func (p *Provider) Close() {
	p.mu.Lock()
	d := p.discovery
	p.watchers = nil
	p.mu.Unlock()
	if d != nil {
		d.Close()
	}
	p.pool.close()
	if p.workspaces != nil {
		p.workspaces.close()
	}
}

// Manifest is the ACP manifest of docs/protocol.md §10.4 under the configured id, with
// conversation continuity as the probe found it.
func (p *Provider) Manifest() api.ProviderManifest { return manifest(p.settings.id, p.learned.Load()) }

// Run runs one turn of the execution's conversation with the execution's input and returns the
// concatenated agent text. Every failure is the generic errAgentRequestFailed.
func (p *Provider) Run(ctx context.Context, run *backend.Run) (backend.Result, error) {
	if len(run.Config()) != 0 {
		return backend.Result{}, errExecutionConfigNotEmpty
	}
	id := run.ExecutionID()
	t := newTurn(p, run)
	if !p.register(id, t) {
		return backend.Result{}, errAlreadyRunning
	}
	defer p.unregister(id, t)
	// The runtime cancels ctx before it calls Cancel. Registering first and checking ctx after
	// means a Cancel that found no turn is always followed by this check seeing the
	// cancellation, so no agent is ever prompted behind a cancellation's back.
	if ctx.Err() != nil {
		return backend.Result{}, ctx.Err()
	}
	return t.execute(ctx)
}

// Cancel is the runtime's cleanup hook: it ends the execution's turn — pending permission
// requests answered cancelled, session/cancel — and keeps the process warm if the agent ends
// the turn within the shutdown grace, else tears it down (stdin close → SIGTERM → SIGKILL); it
// fails with "ACP process closure was not confirmed" when the child's exit could not be
// confirmed within the ladder or ctx. An execution with no turn (never started, or already
// finished) has nothing to clean up.
func (p *Provider) Cancel(ctx context.Context, executionID string, _ string) error {
	p.mu.Lock()
	t := p.turns[executionID]
	p.mu.Unlock()
	if t == nil {
		return nil
	}
	return t.endWithin(ctx)
}

func (p *Provider) register(id string, t *turn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, running := p.turns[id]; running {
		return false
	}
	p.turns[id] = t
	return true
}

func (p *Provider) unregister(id string, t *turn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.turns[id] == t {
		delete(p.turns, id)
	}
}

// observer lets tests see what the portable errors hide: which child was spawned (keyed by the
// execution that spawned it, or "probe"; to check it was reaped) and why an execution failed; and lets them hold the recording of session/updates
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

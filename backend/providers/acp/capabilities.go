package acp

import (
	"context"
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"
)

// agentCapabilities is what an agent answered to initialize about continuing a session in a new
// process: session/resume (agentCapabilities.sessionCapabilities.resume) and session/load
// (agentCapabilities.loadSession, which replays the history as session/updates first).
type agentCapabilities struct {
	resume, load bool
}

func capabilitiesOf(c acpsdk.AgentCapabilities) agentCapabilities {
	return agentCapabilities{resume: c.SessionCapabilities.Resume != nil, load: c.LoadSession}
}

// canContinue reports whether a fresh process can continue a stored session.
func (c agentCapabilities) canContinue() bool { return c.resume || c.load }

// continuation names how a stored session is continued: resume (no replay) when the agent can,
// else load.
func (c agentCapabilities) continuation() string {
	if c.resume {
		return acpsdk.AgentMethodSessionResume
	}
	return acpsdk.AgentMethodSessionLoad
}

// probeOwner is the observer's key for the capability probe's process.
const probeOwner = "probe"

// probe starts the agent once, asks initialize, and keeps its answer for the manifest: whether
// the agent can continue a session is known only from it, and the manifest is read when the
// provider is registered. The process is torn down before probe returns. An agent that answers
// with another protocol version can never serve an execution (errProtocolVersion).
func (p *Provider) probe(ctx context.Context) error {
	s := newSession(p.settings, p.observe, p.settings.cwd, probeOwner)
	defer func() { _ = s.shutdown() }()
	if err := s.spawn(p.settings.env); err != nil {
		return fmt.Errorf("start %s: %w", p.settings.command, err)
	}
	caps, err := s.initialize(ctx)
	if err != nil {
		if cause := s.brokenReason(); cause != nil {
			err = cause
		}
		return fmt.Errorf("initialize %s: %w", p.settings.command, err)
	}
	p.learned.Store(&caps)
	return nil
}

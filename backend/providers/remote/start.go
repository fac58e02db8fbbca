package remote

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// checkpoint is the relay's durable position, committed with every event it relays (see
// backend.Run.WithCheckpoint).
type checkpoint struct {
	UpstreamExecutionID    string `json:"upstreamExecutionId"`
	UpstreamConversationID string `json:"upstreamConversationId"`
	// After is the last upstream sequence relayed (or deliberately skipped).
	After int64 `json:"after"`
	// UpstreamActionID is the upstream action behind the local pending action, if any.
	UpstreamActionID string `json:"upstreamActionId,omitempty"`
	// Answer is the local answer to that action, recorded before it is forwarded upstream, so
	// a restart between the two still forwards it.
	Answer *api.ActionResponse `json:"answer,omitempty"`
}

func (cp checkpoint) encode() []byte {
	raw, err := json.Marshal(cp)
	if err != nil {
		panic("remote: encode checkpoint: " + err.Error()) // strings and a number: cannot fail
	}
	return raw
}

// IdempotencyKey is the upstream idempotency key of a local execution: the same local
// execution always names the same upstream execution, whoever retries or restarts.
func IdempotencyKey(localExecutionID string) string { return "harness-edge-" + localExecutionID }

// startUpstream starts (or finds again) the upstream execution and records it. The calls are
// not cut by a cancellation of ctx: a start cut half-way could leave an upstream execution
// nobody knows of, while a finished one is cancelled by Cancel.
func (p *Provider) startUpstream(ctx context.Context, run *backend.Run) (checkpoint, error) {
	callCtx, cancel := p.up.call(context.WithoutCancel(ctx))
	defer cancel()
	req := api.StartExecutionRequest{
		ProviderID:     p.upstreamID,
		Input:          run.Input(),
		Config:         run.Config(), // an empty config is left out: absent means {} (docs/protocol.md §6)
		IdempotencyKey: new(IdempotencyKey(run.ExecutionID())),
	}
	var exec api.Execution
	for attempt := 0; ; attempt++ {
		conv, err := p.upstreamConversation(callCtx, run, attempt > 0)
		if err != nil {
			return checkpoint{}, errors.New(p.upstreamMessage("create a conversation", err))
		}
		req.ConversationID = conv
		exec, err = p.up.client.StartExecution(callCtx, req)
		if errors.Is(err, sdk.ErrNotFound) && attempt == 0 {
			continue // the upstream lost the conversation: map a new one
		}
		if err != nil {
			return checkpoint{}, errors.New(p.upstreamMessage("start the execution", err))
		}
		break
	}
	cp := checkpoint{UpstreamExecutionID: exec.ID, UpstreamConversationID: req.ConversationID}
	if err := run.SaveCheckpoint(cp.encode()); err != nil {
		return cp, err
	}
	return cp, nil
}

// upstreamConversation returns the upstream conversation of the execution's local
// conversation, creating and recording it the first time (or again when fresh is set: the
// upstream no longer knows the recorded one).
func (p *Provider) upstreamConversation(ctx context.Context, run *backend.Run, fresh bool) (string, error) {
	key := "conversation\x00" + p.up.s.base + "\x00" + run.ConversationID()
	p.up.convMu.Lock()
	defer p.up.convMu.Unlock()
	if !fresh {
		if raw, found, err := run.LoadState(key); err != nil {
			return "", err
		} else if found {
			return string(raw), nil
		}
	}
	conv, err := p.up.client.CreateConversation(ctx, api.CreateConversationRequest{
		Metadata: &api.JSONObject{"edgeConversationId": run.ConversationID()},
	})
	if err != nil {
		return "", err
	}
	if err := run.SaveState(key, []byte(conv.ID)); err != nil {
		return "", err
	}
	return conv.ID, nil
}

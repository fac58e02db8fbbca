package backend

import (
	"context"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Provider is the SPI an agent harness adapter implements (docs/protocol.md §11.1).
//
// Contract: honour ctx promptly; request one action at a time; never emit lifecycle events; put
// native observations under provider.event; declare honest support levels; never put secrets in
// error messages (they become the execution's error message or providerCleanupError).
type Provider interface {
	// Manifest describes the provider. It is read once, at registration.
	Manifest() api.ProviderManifest
	// Run does the work. ctx is cancelled when the execution is cancelled (or the runtime closes);
	// context.Cause(ctx) carries the cancellation reason. Returning an error fails the execution
	// with that message (PROVIDER_ERROR), unless it was cancelled.
	Run(ctx context.Context, run *Run) (Result, error)
}

// Canceler is the optional cleanup hook, called exactly once per cancelled execution, even when
// Run never started; ctx carries the runtime's cancel timeout. Its error becomes
// providerCleanupError in run.cancelled.
type Canceler interface {
	Cancel(ctx context.Context, executionID string, reason string) error
}

// Result is what a successful Run returns.
type Result struct {
	FinalOutput string
}

// ActionInput is what a provider asks a caller for (docs/protocol.md §7.1). The last three are
// harness-edge's (docs/protocol.md, "Approvals"), each optional: what the agent itself offers
// as answers, what the approval is about (which an edit changes), and the kind of tool, which
// standing rules match on.
type ActionInput struct {
	Kind        api.ActionKind
	Title       string
	Description *string
	Payload     api.JSONObject
	// Options are the agent's own answers (ACP permission options); a caller may name one.
	Options []api.ActionOption
	// Arguments are what an approval asks about (ACP: the tool call's input): with them the
	// action also takes `edit`, whose changed arguments the provider gets in the answer.
	Arguments api.JSONObject
	// ToolKind is the kind of tool the approval is about (ACP's ToolKind).
	ToolKind string
}

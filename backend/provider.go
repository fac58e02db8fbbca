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

// Run is what a provider gets: ids, input, a private deep copy of the config, and the calls back
// into the runtime. Its methods are safe for concurrent use; none of them is called while the
// runtime holds a lock of its own, and none leaves one held when it returns.
type Run struct {
	rt     *Runtime
	x      *execution
	config api.JSONObject
	// checkpoint, when set (WithCheckpoint), is committed with each emission of this view.
	checkpoint []byte
}

// ExecutionID is the id of the execution being run.
func (r *Run) ExecutionID() string { return r.x.id }

// ConversationID is the conversation the execution belongs to.
func (r *Run) ConversationID() string { return r.x.conversationID }

// Input is the caller's prompt (may be empty).
func (r *Run) Input() string { return r.x.input }

// Config is the provider's own deep copy of the execution's effective config: the provider may
// modify it freely.
func (r *Run) Config() api.JSONObject { return r.config }

// Messages the reference uses for refused provider calls (docs/protocol.md §4.4, §7.1, §9).
const (
	msgExecutionAborted      = "Execution aborted"
	msgReservedEventType     = "Provider emitted a reserved or unknown event type"
	msgInvalidEventData      = "Provider emitted invalid JSON event data"
	msgInvalidTextDelta      = "Provider emitted an invalid text delta"
	msgInvalidArtifact       = "Provider emitted an invalid artifact descriptor"
	msgDuplicateArtifact     = "Provider emitted duplicate artifact id: %s"
	msgInvalidAction         = "Provider requested an invalid action"
	msgActionWrongState      = "Provider requested an action while execution was %s"
	msgUnresolvedAction      = "Provider finished with an unresolved action"
	msgEmptyProviderError    = "Provider failed without an error message"
	msgEventDataTooLarge     = "Provider emitted event data larger than %d bytes"
	msgRestartedBeforeFinish = "Runtime restarted before the execution finished"
	msgCleanupFailed         = "Provider cleanup failed"
	msgCleanupTimedOut       = "Provider cleanup did not finish within %s"
)

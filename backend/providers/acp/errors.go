package acp

import "errors"

// Portable error messages (docs/protocol.md §11.4). They become error.message,
// run.failed.message or run.cancelled.providerCleanupError, so they never carry what the agent
// said: the agent's diagnostics may hold prompts, file contents or credentials.
var (
	// errAgentRequestFailed is every failure of the agent or of the conversation with it: spawn
	// errors, crashes, protocol violations, timeouts, a cancelled stop reason.
	errAgentRequestFailed = errors.New("ACP agent request failed")
	// errExecutionConfigNotEmpty refuses per-execution configuration before anything is spawned.
	errExecutionConfigNotEmpty = errors.New("ACP execution config must be empty; configure the trusted provider constructor")
	// errAlreadyRunning refuses a second concurrent run of one execution id.
	errAlreadyRunning = errors.New("ACP execution is already running")
	// errClosureUnconfirmed is the teardown result when the child was not seen to exit even after
	// SIGKILL and a last grace period.
	errClosureUnconfirmed = errors.New("ACP process closure was not confirmed")
)

// Internal causes of errAgentRequestFailed, kept for tests (see Provider.observe).
var (
	errProtocolVersion  = errors.New("agent answered initialize with another protocol version")
	errNoSession        = errors.New("agent answered session/new without a session id")
	errTurnCancelled    = errors.New("agent ended the turn with stop reason cancelled")
	errAgentUnavailable = errors.New("agent process could not be started")
	errRunTimeout       = errors.New("run timeout elapsed")
	errConversationDir  = errors.New("the conversation's working directory could not be made")
	errPoolClosed       = errors.New("the provider was closed (configuration reloaded or server stopping)")
)

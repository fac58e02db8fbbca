// Package acp runs Agent Client Protocol (ACP v1) agents — Claude Code, Gemini CLI, Codex through
// their ACP bridges, or anything else that speaks ACP over stdio — as subprocesses behind the
// Harness Runtime API.
//
// The runtime is the ACP client and the configured executable is the ACP agent. A conversation's
// executions are turns (turn.go) of one native ACP session: its process (session.go) stays warm
// between them in a bounded pool (pool.go), and a new process continues the session stored with
// the conversation by session/resume or session/load, whichever the agent offers
// (continuity.go); an initialize probe tells the manifest which (capabilities.go). Each turn is
// session/prompt. Agent message chunks become output.text.delta events and the final output,
// every session/update becomes a provider.event, and session/request_permission becomes an
// approval action whose answer is mapped back onto one of the agent's options (see
// permissions.go).
//
// Launch settings are trusted deployment configuration (Config); an execution cannot change them
// and its own config must be empty. The child sees only the configured environment (and, when the
// execution has a trace context, TRACEPARENT: tracing.go) and its stderr is discarded; any failure is reported as the generic "ACP agent request failed" so that
// agent diagnostics never reach portable errors. This is not a sandbox: the agent keeps the
// operating-system privileges of the server, and teardown only confirms that the direct child
// exited.
//
// The behaviour follows the reference adapter (docs/protocol.md §11.4) and is built on
// github.com/coder/acp-go-sdk for JSON-RPC framing, request correlation and the ACP types; the
// boundary (boundary.go, inbound.go) adds only what the SDK lacks (docs/acp.md).
package acp

// Package remote serves the providers of another Harness Runtime API server (the TypeScript
// reference, another harness-edge, a vendor's runtime) through this runtime: the edge in front
// of an upstream. It is built on the project's own SDK (package sdk).
//
// One local execution is one upstream execution, started with an idempotency key derived from
// the local execution id, so retries and restarts never start a second one. A local
// conversation maps to one upstream conversation, kept in the provider's durable state, so
// continuity holds across executions. The upstream's events are relayed as local emissions:
// text deltas, action requests (answered locally, the answer forwarded upstream), artifacts,
// provider events, and the terminal event (run.completed becomes the result; run.failed and a
// cancellation nobody asked for here become a PROVIDER_ERROR naming the upstream).
//
// The relay position (the last upstream sequence relayed) is a backend checkpoint committed in
// the same transaction as the local event it accounts for, so after an edge restart the
// execution is resumed (backend.Resumer) from exactly there: nothing relayed twice, nothing
// lost. The SDK resumes dropped upstream streams; an upstream that stays unreachable longer
// than GoneTimeout fails the execution with a clear message. Upstream error bodies never reach
// local messages: only the Problem message the upstream gave (or its HTTP status) does.
//
// See docs/remote.md for configuration and behaviour.
package remote

package acp

import (
	"context"
	"slices"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/harness-edge/harness-edge/backend"
)

// Tracing. The execution's span is in the context Run gets (backend/tracing.go); the session
// makes each JSON-RPC call it sends for a turn (initialize, session/new, resume or load,
// session/prompt: the prompt turn) and each request the agent makes of it
// (session/request_permission) a child span of the turn's execution span, and gives the agent
// process TRACEPARENT, the W3C traceparent of the execution that spawned it, so an agent that
// traces joins that trace. With tracing off the spans are no-ops and TRACEPARENT is set only
// when the caller sent a trace context. Calls outside a turn (the capability probe) have no
// parent.

const tracerName = "github.com/harness-edge/harness-edge/backend/providers/acp"

// rpcSpan starts the span of one JSON-RPC call: kind client for the calls we send, server for
// the agent's requests.
func (s *session) rpcSpan(method string, kind trace.SpanKind) trace.Span {
	parent := context.Background()
	t := s.turn()
	if t != nil && t.traceCtx != nil {
		parent = t.traceCtx
	}
	_, span := trace.SpanFromContext(parent).TracerProvider().Tracer(tracerName).Start(parent, method, trace.WithSpanKind(kind))
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("rpc.system", "jsonrpc"),
			attribute.String("rpc.method", method))
		if t != nil {
			span.SetAttributes(backend.AttrExecutionID.String(t.executionID()))
		}
	}
	return span
}

// endRPCSpan ends a call's span with its outcome.
func endRPCSpan(span trace.Span, err error, attrs ...attribute.KeyValue) {
	if span.IsRecording() {
		span.SetAttributes(attrs...)
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}

// sendRequest is acpsdk.SendRequest inside the call's span.
func sendRequest[T any](s *session, ctx context.Context, method string, params any) (T, error) {
	span := s.rpcSpan(method, trace.SpanKindClient)
	result, err := acpsdk.SendRequest[T](s.conn, ctx, method, params)
	endRPCSpan(span, err)
	return result, err
}

// agentEnv is the configured environment plus TRACEPARENT (and TRACESTATE) of the execution
// that spawns the agent, unless the configuration sets them itself.
func (t *turn) agentEnv() []string {
	configured := t.p.settings.env
	traceParent := ""
	if t.traceCtx != nil {
		traceParent = backend.TraceParent(t.traceCtx)
	}
	if traceParent == "" {
		return configured
	}
	env := slices.Clip(configured) // appending never writes into the shared settings
	if !hasEnv(env, "TRACEPARENT") {
		env = append(env, "TRACEPARENT="+traceParent)
		if ts := trace.SpanContextFromContext(t.traceCtx).TraceState().String(); ts != "" && !hasEnv(env, "TRACESTATE") {
			env = append(env, "TRACESTATE="+ts)
		}
	}
	return env
}

func hasEnv(env []string, name string) bool {
	for _, kv := range env {
		if len(kv) > len(name) && kv[len(name)] == '=' && kv[:len(name)] == name {
			return true
		}
	}
	return false
}

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
// makes each JSON-RPC call it sends (initialize, session/new, session/prompt: the prompt turn)
// and each request the agent makes of it (session/request_permission) a child span of it, and
// gives the agent process TRACEPARENT, the execution span's W3C traceparent, so an agent that
// traces joins the same trace. With tracing off the spans are no-ops and TRACEPARENT is set
// only when the caller sent a trace context.

const tracerName = "github.com/harness-edge/harness-edge/backend/providers/acp"

// traceSession keeps ctx, the context Run was given, as the parent of the session's spans.
func (s *session) traceSession(ctx context.Context) {
	s.traceCtx = ctx
}

// rpcSpan starts the span of one JSON-RPC call: kind client for the calls we send, server for
// the agent's requests.
func (s *session) rpcSpan(method string, kind trace.SpanKind) trace.Span {
	parent := s.traceCtx
	if parent == nil {
		parent = context.Background()
	}
	_, span := trace.SpanFromContext(parent).TracerProvider().Tracer(tracerName).Start(parent, method, trace.WithSpanKind(kind))
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("rpc.system", "jsonrpc"),
			attribute.String("rpc.method", method),
			backend.AttrExecutionID.String(s.run.ExecutionID()))
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

// agentEnv is the configured environment plus TRACEPARENT (and TRACESTATE), unless the
// configuration sets them itself.
func (s *session) agentEnv() []string {
	traceParent := ""
	if s.traceCtx != nil {
		traceParent = backend.TraceParent(s.traceCtx)
	}
	if traceParent == "" {
		return s.settings.env
	}
	env := slices.Clip(s.settings.env) // appending never writes into the shared settings
	if !hasEnv(env, "TRACEPARENT") {
		env = append(env, "TRACEPARENT="+traceParent)
		if ts := trace.SpanContextFromContext(s.traceCtx).TraceState().String(); ts != "" && !hasEnv(env, "TRACESTATE") {
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

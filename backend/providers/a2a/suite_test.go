package a2a_test

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/harness-edge/harness-edge/backend"
	a2aprovider "github.com/harness-edge/harness-edge/backend/providers/a2a"
	"github.com/harness-edge/harness-edge/internal/a2atest"
)

// The provider's suite runs once per agent build (a2atest.Builds): @a2a-js/sdk 0.3 (A2A 0.3),
// the 1.x line speaking A2A 1.0 only, and the 1.x line with its 0.3 compatibility on (both
// versions offered; the provider speaks 1.0). Every scenario is written once and asserts the same
// behaviour whichever wire carries it.

// suite is one build's run: an agent behind a TCP proxy that can cut its connections (its card
// advertises the proxy), and an edge in front of the proxy with tracing configured, shared by the
// scenarios (each in conversations of its own). Scenarios that need an agent or an edge of their
// own start them.
type suite struct {
	*edge
	build a2atest.Build
	agent *a2atest.Agent
	cut   *cutProxy
	spans *tracetest.SpanRecorder
}

func TestA2A(t *testing.T) {
	for _, build := range a2atest.Builds(t) {
		t.Run(build.Name, func(t *testing.T) {
			s := startSuite(t, build)
			for _, sc := range []struct {
				name string
				run  func(*testing.T)
			}{
				{"Echo", s.echoStreamsEveryMessageOnceInOrder},
				{"Polled", s.agentWithoutStreamingIsPolled},
				{"InputRequired", s.inputRequiredIsAnActionAnsweredAsTheNextMessage},
				{"DeclinedInput", s.declinedInputFails},
				{"TypedAnswers", s.typedAnswersToInput},
				{"Artifact", s.artifactBecomesADescriptor},
				{"Usage", s.usageFromMetadata},
				{"FailedAndAuthRequired", s.failedAndAuthRequiredFail},
				{"Cancel", s.cancelCancelsTheTask},
				{"ConversationContext", s.conversationKeepsTheAgentsContext},
				{"Manifest", s.manifestFromAgentCard},
				{"Credentials", s.credentialsReachTheAgent},
				{"TraceContext", s.agentCallsCarryTheExecutionsTraceContext},
				{"Wire", s.agentIsSpokenToInItsBestVersion},
				{"CutStream", s.cutAgentStreamIsResumedExactlyOnce},
				{"AnswerResent", s.answerSentAgainWhenTheAgentWasOutOfReach},
				{"AgentForgotTheTask", s.agentThatForgotTheTaskFailsIt},
				{"AgentDownAtStart", s.agentDownAtStartGetsAStandInManifestUntilTheCardArrives},
				{"Conformance", s.conformanceThroughTheEdge},
			} {
				t.Run(sc.name, sc.run)
			}
		})
	}
}

func startSuite(t *testing.T, build a2atest.Build) *suite {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	cut := startCutProxy(t)
	agent := build.Start(t, "PUBLIC_URL="+cut.url())
	cut.setTarget(agent.URL)
	e := startEdgeWith(t, t.TempDir(), a2aprovider.Config{URL: cut.url()}, backend.Options{TracerProvider: tp})
	return &suite{edge: e, build: build, agent: agent, cut: cut, spans: spans}
}

// wait is a minute's context for one scenario's calls.
func wait(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

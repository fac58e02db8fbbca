package backend_test

import (
	"fmt"
	"regexp"
	"slices"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

var (
	executionIDPattern = regexp.MustCompile(`^exec_[0-9a-f]{32}$`)
	timestampPattern   = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)
)

func TestMockHelloRuntimeGivesTheCanonicalSevenEvents(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	conv := newConversation(t, rt)
	exec := start(t, rt, conv, startOpts{input: "hello runtime"})
	if exec.State != api.ExecutionStateQueued || !executionIDPattern.MatchString(exec.Id) {
		t.Fatalf("new execution: state %s id %s", exec.State, exec.Id)
	}
	events := collect(t, rt, exec.Id, 0)
	want := []struct {
		typ  api.StandardEventType
		data string
	}{
		{api.StandardEventTypeRunQueued, `{"providerId":"mock"}`},
		{api.StandardEventTypeRunStarted, `{"providerId":"mock"}`},
		{api.StandardEventTypeOutputTextDelta, `{"text":"Echo: "}`},
		{api.StandardEventTypeOutputTextDelta, `{"text":"hello "}`},
		{api.StandardEventTypeOutputTextDelta, `{"text":"runtime"}`},
		{api.StandardEventTypeOutputTextDone, `{"text":"Echo: hello runtime"}`},
		{api.StandardEventTypeRunCompleted, `{"finalOutput":"Echo: hello runtime"}`},
	}
	if len(events) != len(want) {
		t.Fatalf("got %d events %v", len(events), types(events))
	}
	for i, w := range want {
		e := events[i]
		if e.Type != w.typ || jsonString(e.Data) != w.data || e.Sequence != int64(i+1) ||
			e.Id != fmt.Sprintf("%s:%d", exec.Id, i+1) || e.ExecutionId != exec.Id || !timestampPattern.MatchString(e.Time) {
			t.Errorf("event %d = %+v, want %s %s", i+1, e, w.typ, w.data)
		}
	}
	final := getExecution(t, rt, exec.Id)
	if final.State != api.ExecutionStateSucceeded || final.FinalOutput == nil || *final.FinalOutput != "Echo: hello runtime" ||
		final.StartedAt == nil || final.EndedAt == nil || final.Error != nil {
		t.Fatalf("final execution %+v", final)
	}
	if !slices.Equal(final.RequiredCapabilities, []string{}) || len(final.EffectiveConfig) != 0 {
		t.Fatalf("defaults: caps %v config %v", final.RequiredCapabilities, final.EffectiveConfig)
	}

	// Replay after 2 starts at sequence 3.
	replay, next, err := rt.ListEvents(ctxT(t), exec.Id, 2, 0)
	if err != nil || len(replay) != 5 || replay[0].Sequence != 3 || next != 7 {
		t.Fatalf("replay after 2: %d events, next %d, err %v", len(replay), next, err)
	}
}

package backend_test

import (
	"fmt"
	"regexp"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
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
	if exec.State != api.ExecutionStateQueued || !executionIDPattern.MatchString(exec.ID) {
		t.Fatalf("new execution: state %s id %s", exec.State, exec.ID)
	}
	events := collect(t, rt, exec.ID, 0)
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
			e.ID != fmt.Sprintf("%s:%d", exec.ID, i+1) || e.ExecutionID != exec.ID || !timestampPattern.MatchString(e.Time) {
			t.Errorf("event %d = %+v, want %s %s", i+1, e, w.typ, w.data)
		}
	}
	final := getExecution(t, rt, exec.ID)
	if final.State != api.ExecutionStateSucceeded || final.FinalOutput == nil || *final.FinalOutput != "Echo: hello runtime" ||
		final.StartedAt == nil || final.EndedAt == nil || final.Error != nil {
		t.Fatalf("final execution %+v", final)
	}
	if !slices.Equal(final.RequiredCapabilities, []string{}) || len(final.EffectiveConfig) != 0 {
		t.Fatalf("defaults: caps %v config %v", final.RequiredCapabilities, final.EffectiveConfig)
	}

	// Replay after 2 starts at sequence 3.
	replay, next, err := rt.ListEvents(ctxT(t), exec.ID, 2, 0)
	if err != nil || len(replay) != 5 || replay[0].Sequence != 3 || next != 7 {
		t.Fatalf("replay after 2: %d events, next %d, err %v", len(replay), next, err)
	}
}

func TestConversationsAndObserver(t *testing.T) {
	obs := &countingObserver{}
	rt := openRuntime(t, "", backend.Options{Observer: obs, Name: "edge-test", Version: "9.9.9"})
	meta := api.JSONObject{"team": "a", "n": 1}
	c, err := rt.CreateConversation(ctxT(t), meta)
	if err != nil || !regexp.MustCompile(`^conv_[0-9a-f]{32}$`).MatchString(c.ID) || !timestampPattern.MatchString(c.CreatedAt) {
		t.Fatalf("conversation %+v %v", c, err)
	}
	meta["team"] = "changed"
	got, err := rt.GetConversation(ctxT(t), c.ID)
	if err != nil || got.Metadata["team"] != "a" || got.CreatedAt != c.CreatedAt {
		t.Fatalf("stored conversation %+v %v", got, err)
	}
	empty, _ := rt.CreateConversation(ctxT(t), nil)
	if empty.Metadata == nil || len(empty.Metadata) != 0 {
		t.Fatalf("nil metadata must become {}: %#v", empty.Metadata)
	}
	if d := rt.Describe(); d.Name != "edge-test" || d.Version != "9.9.9" {
		t.Fatalf("identity %s %s", d.Name, d.Version)
	}

	exec := start(t, rt, c.ID, startOpts{input: "hello runtime"})
	_, final := finalOf(t, rt, exec.ID)
	if final.UpdatedAt != *final.EndedAt || final.CreatedAt != exec.CreatedAt || exec.UpdatedAt != exec.CreatedAt {
		t.Fatalf("timestamps: created %s updated %s ended %s", final.CreatedAt, final.UpdatedAt, *final.EndedAt)
	}
	rt.Close()
	if obs.started.Load() != 1 || obs.finished.Load() != 1 || obs.events.Load() != 7 || obs.commits.Load() == 0 {
		t.Fatalf("observer: started %d finished %d events %d commits %d", obs.started.Load(), obs.finished.Load(), obs.events.Load(), obs.commits.Load())
	}
}

type countingObserver struct {
	started, finished, events, commits atomic.Int64
}

func (o *countingObserver) ExecutionStarted(string)                      { o.started.Add(1) }
func (o *countingObserver) ExecutionFinished(string, api.ExecutionState) { o.finished.Add(1) }
func (o *countingObserver) EventsAppended(n int)                         { o.events.Add(int64(n)) }
func (o *countingObserver) StoreCommit(time.Duration)                    { o.commits.Add(1) }

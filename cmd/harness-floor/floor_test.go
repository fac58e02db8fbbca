package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The floor must be a valid yardstick: the SDK's Run (what harness-load's e2e phase calls)
// runs an execution against it to success, from the streamed events and the trailer alone,
// with the same events harness-edge's mock sends; and every execution is in the store.
func TestTheSDKRunsExecutionsAgainstTheFloorAndTheyAreStored(t *testing.T) {
	store, err := openStore(filepath.Join(t.TempDir(), "floor.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newHandler(store))
	defer srv.Close()
	defer store.close()

	client, err := sdk.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.Health(ctx); err != nil {
		t.Fatal(err)
	}
	conv, err := client.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	const runs = 3
	for range runs {
		var types []string
		res, err := client.Run(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock",
			Input: "hello runtime", Config: api.JSONObject{"delayMs": 0}}, sdk.RunHandlers{
			OnEvent: func(ev api.RuntimeEvent) { types = append(types, string(ev.Type)) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Succeeded() || res.Execution.FinalOutput == nil || *res.Execution.FinalOutput != "Echo: hello runtime" {
			t.Fatalf("Run = %+v, want succeeded with the echo", res.Execution)
		}
		want := "run.queued run.started output.text.delta output.text.delta output.text.delta output.text.done run.completed"
		if got := strings.Join(types, " "); got != want {
			t.Fatalf("events %q, want %q", got, want)
		}
	}
	if n, err := store.count(); err != nil || n != runs {
		t.Fatalf("stored executions = %d, %v; want %d", n, err, runs)
	}
}

// The portable way against the floor: StartExecution (202) then Events (the SSE stream of the
// events operation), as harness-load's -e2e-start separate runs them: the same 7 events, every
// execution stored, and the commits counted in the histogram harness-load reads.
func TestTheSDKStartsThenStreamsAgainstTheFloor(t *testing.T) {
	store, err := openStore(filepath.Join(t.TempDir(), "floor.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newHandler(store))
	defer srv.Close()
	defer store.close()

	client, err := sdk.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conv, err := client.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	const runs = 3
	for range runs {
		exec, err := client.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock",
			Input: "hello runtime", Config: api.JSONObject{"delayMs": 0}})
		if err != nil {
			t.Fatal(err)
		}
		if exec.ID == "" || exec.State != api.ExecutionStateQueued || exec.ConversationID != conv.ID {
			t.Fatalf("202 body %+v, want the queued execution", exec)
		}
		var types []string
		for ev, err := range client.Events(ctx, exec.ID, 0) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.ExecutionID != exec.ID {
				t.Fatalf("event of %s in the stream of %s", ev.ExecutionID, exec.ID)
			}
			types = append(types, string(ev.Type))
		}
		want := "run.queued run.started output.text.delta output.text.delta output.text.delta output.text.done run.completed"
		if got := strings.Join(types, " "); got != want {
			t.Fatalf("events %q, want %q", got, want)
		}
	}
	if n, err := store.count(); err != nil || n != runs {
		t.Fatalf("stored executions = %d, %v; want %d", n, err, runs)
	}
	res, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(metrics), `harness_store_commit_duration_seconds_bucket{le="+Inf"} `) {
		t.Fatalf("/metrics without the commit histogram:\n%s", metrics)
	}
}

func TestTheFloorListensOnlyOnLoopback(t *testing.T) {
	err := run("0.0.0.0:0", t.TempDir(), false, 0)
	if err == nil || !strings.Contains(err.Error(), "only loopback") {
		t.Fatalf("run on 0.0.0.0 = %v, want a refusal", err)
	}
}

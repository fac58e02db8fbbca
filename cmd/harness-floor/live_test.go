package main

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The live mode streams a delayMs execution as the mock does — the same events in the same
// order, to a stream opened right after the 202 — and every event is in the store (one Put
// each, the start's record and run.queued in one), with a linger on the group commit.
func TestTheFloorStreamsALiveExecutionEventByEventAndStoresEachEvent(t *testing.T) {
	store, err := openStoreLinger(filepath.Join(t.TempDir(), "floor.db"), false, time.Millisecond)
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
	exec, err := client.StartExecution(ctx, api.StartExecutionRequest{ConversationID: "conv_1", ProviderID: "mock",
		Input: "one two three", Config: api.JSONObject{"delayMs": 5}})
	if err != nil {
		t.Fatal(err)
	}
	if exec.State != api.ExecutionStateQueued {
		t.Fatalf("start answered %s, want queued", exec.State)
	}
	var types, texts []string
	var seq int64
	for ev, err := range client.Events(ctx, exec.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Sequence != seq+1 {
			t.Fatalf("sequence %d after %d", ev.Sequence, seq)
		}
		seq = ev.Sequence
		types = append(types, string(ev.Type))
		if ev.Type == api.StandardEventTypeOutputTextDelta {
			d, _ := ev.Data.AsTextDeltaData()
			texts = append(texts, d.Text)
		}
	}
	want := "run.queued run.started output.text.delta output.text.delta output.text.delta output.text.delta output.text.done run.completed"
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
	if got := strings.Join(texts, "|"); got != "Echo: |one |two |three" {
		t.Fatalf("deltas %q, want the mock's chunks", got)
	}
	if n, err := store.count(); err != nil || n != len(types) {
		t.Fatalf("store holds %d keys (%v), want %d: the start with run.queued, then one per event", n, err, len(types))
	}
}

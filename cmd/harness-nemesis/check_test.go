package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// writeHistory writes a one-execution history whose final read on the
// second node answered finalStatus.
func writeHistory(t *testing.T, finalStatus int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := history.NewWriter(f)
	t0 := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)
	snap := `{"id":"exec_1","conversationId":"conv_1","providerId":"mock","state":"succeeded","input":"x","updatedAt":"2026-12-03T14:00:01Z"}`
	w.Run(history.Run{Seed: 3, Store: "bolt", Nodes: []string{"n1"}, Lease: history.Duration(time.Second)})
	w.Request(history.Request{Op: "start", Node: "n1", Tenant: "a", Invoke: t0, Complete: t0.Add(time.Millisecond), Status: 202,
		Body:   json.RawMessage(`{"conversationId":"conv_1","providerId":"mock","input":"x","idempotencyKey":"k"}`),
		Answer: json.RawMessage(`{"id":"exec_1","conversationId":"conv_1","providerId":"mock","state":"queued","input":"x","updatedAt":"2026-12-03T14:00:00Z"}`)})
	w.Final(history.Final{Header: history.Header{T: t0.Add(10 * time.Second)}, Node: "n1", ExecutionID: "exec_1", Status: 200, State: "succeeded", Snapshot: json.RawMessage(snap)})
	final := history.Final{Header: history.Header{T: t0.Add(11 * time.Second)}, Node: "n2", ExecutionID: "exec_1", Status: finalStatus}
	if finalStatus == 200 {
		final.State, final.Snapshot = "succeeded", json.RawMessage(snap)
	}
	w.Final(final)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return path
}

// runCheck's exit codes: 0 clean, 1 a violation (an acknowledged start one
// node does not know), 2 no such file.
func TestRunCheckExitCodes(t *testing.T) {
	if code := runCheck([]string{writeHistory(t, 200)}); code != 0 {
		t.Errorf("clean history: exit %d, want 0", code)
	}
	if code := runCheck([]string{writeHistory(t, 404)}); code != 1 {
		t.Errorf("a missing start: exit %d, want 1", code)
	}
	if code := runCheck([]string{filepath.Join(t.TempDir(), "absent.jsonl")}); code != 2 {
		t.Errorf("no file: exit %d, want 2", code)
	}
}

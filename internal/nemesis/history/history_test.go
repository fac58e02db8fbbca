package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A history written by every kind of writer call reads back field for field.
func TestRoundTripEveryKind(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f)
	t0 := time.Date(2026, 12, 3, 13, 0, 0, 123456789, time.UTC)
	run := Run{Seed: 42, Store: "postgres", Nodes: []string{"n1", "n2", "n3"}, Lease: Duration(5 * time.Second),
		Settings: Settings{CancelBound: Duration(10 * time.Second), MaxRunning: 4, Tenants: []string{"a", "b"},
			Budgets: []Budget{{Tenant: "a", Tokens: 500, Slack: 100}}, QuietPeriod: Duration(30 * time.Second)}}
	req := Request{Client: "c1", Node: "n2", Op: "start", Method: "POST", Path: "/v1/executions", Tenant: "a",
		IdempotencyKey: "k1", Body: json.RawMessage(`{"input":"x"}`), Invoke: t0, Complete: t0.Add(time.Millisecond),
		Status: 201, Answer: json.RawMessage(`{"id":"exec_1","state":"pending"}`), ExecutionID: "exec_1"}
	ev := Event{Stream: StreamExecution, Subscription: "s2", ResumedFrom: "s1", After: "6", Scope: "exec_1", Node: "n3",
		Cursor: "7", ExecutionID: "exec_1", Sequence: 7, Type: "execution.completed", Data: json.RawMessage(`{"a":1}`), Header: Header{T: t0}}
	fault := Fault{Fault: "kill", Target: "n1", Phase: PhaseStart, Detail: "SIGKILL"}
	final := Final{Node: "n1", ExecutionID: "exec_1", Status: 200, State: "completed", Snapshot: json.RawMessage(`{"state":"completed"}`)}
	for _, err := range []error{w.Run(run), w.Request(req), w.Event(ev), w.Fault(fault), w.Final(final), w.Flush()} {
		if err != nil {
			t.Fatal(err)
		}
	}
	f.Close()

	lines, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 5 {
		t.Fatalf("read %d lines, want 5", len(lines))
	}
	wantKinds := []Kind{KindRun, KindRequest, KindEvent, KindFault, KindFinal}
	for i, l := range lines {
		if l.Kind != wantKinds[i] || l.No != i+1 {
			t.Fatalf("line %d: kind %q no %d, want %q no %d", i, l.Kind, l.No, wantKinds[i], i+1)
		}
	}
	if got := lines[0].Run; got.Seed != 42 || got.Lease.Std() != 5*time.Second || got.Settings.Budgets[0].Slack != 100 ||
		got.Settings.QuietPeriod.Std() != 30*time.Second || len(got.Nodes) != 3 {
		t.Fatalf("run read back as %+v", got)
	}
	gotReq := lines[1].Request
	if gotReq.ID == 0 {
		t.Fatal("request was given no id")
	}
	if !gotReq.T.Equal(req.Complete) {
		t.Fatalf("request line time %v, want its completion %v", gotReq.T, req.Complete)
	}
	if !gotReq.Invoke.Equal(t0) || gotReq.Status != 201 || string(gotReq.Answer) != string(req.Answer) || gotReq.IdempotencyKey != "k1" {
		t.Fatalf("request read back as %+v", gotReq)
	}
	if got := lines[2].Event; !got.T.Equal(t0) || got.Sequence != 7 || got.ExecutionID != "exec_1" || got.ResumedFrom != "s1" || got.Cursor != "7" || got.After != "6" {
		t.Fatalf("event read back as %+v", got)
	}
	if got := lines[3].Fault; got.Fault != "kill" || got.Phase != PhaseStart || got.T.IsZero() {
		t.Fatalf("fault read back as %+v", got)
	}
	if got := lines[4].Final; got.State != "completed" || got.Status != 200 || string(got.Snapshot) != `{"state":"completed"}` {
		t.Fatalf("final read back as %+v", got)
	}
	// The names the format documents, on the wire.
	raw, _ := os.ReadFile(path)
	for _, name := range []string{`"kind":"event"`, `"executionId":"exec_1"`, `"sequence":7`, `"idempotencyKey":"k1"`, `"lease":"5s"`, `"resumedFrom":"s1"`, `"after":"6"`, `"status":200`} {
		if !bytes.Contains(raw, []byte(name)) {
			t.Errorf("history lacks %s", name)
		}
	}
}

// Many goroutines writing at once produce whole lines, each id once.
func TestWriterConcurrentLinesStayWhole(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var wg sync.WaitGroup
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if err := w.Request(Request{Client: fmt.Sprint("c", c), Op: "get", Status: 200,
					Answer: json.RawMessage(`{"pad":"` + strings.Repeat("x", 100) + `"}`)}); err != nil {
					t.Error(err)
				}
			}
		}(c)
	}
	wg.Wait()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	lines, err := ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1600 {
		t.Fatalf("read %d lines, want 1600", len(lines))
	}
	seen := map[int64]bool{}
	for _, l := range lines {
		if seen[l.Request.ID] {
			t.Fatalf("id %d twice", l.Request.ID)
		}
		seen[l.Request.ID] = true
	}
}

// An answer that is not JSON (a proxy's HTML page) is kept as a string
// rather than breaking the line.
func TestWriterKeepsNonJSONAnswerAsString(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.Request(Request{Op: "start", Status: 502, Answer: json.RawMessage("<html>bad gateway")}); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	lines, err := ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if err := json.Unmarshal(lines[0].Request.Answer, &s); err != nil || s != "<html>bad gateway" {
		t.Fatalf("answer read back as %s (%v)", lines[0].Request.Answer, err)
	}
}

// A line the reader cannot use is an error naming its line number.
func TestReaderNamesBadLine(t *testing.T) {
	in := `{"kind":"run","t":"2026-12-03T13:00:00Z","seed":1}` + "\n\n" + `{"kind":"bogus","t":"2026-12-03T13:00:00Z"}` + "\n"
	_, err := ReadAll(strings.NewReader(in))
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("err = %v, want one naming line 3 and the kind", err)
	}
	_, err = ReadAll(strings.NewReader(`{"kind":"event","sequence":"x"}`))
	if err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("err = %v, want one naming line 1", err)
	}
}

// The last line need not end in a newline (a run killed mid-write).
func TestReaderLastLineWithoutNewline(t *testing.T) {
	lines, err := ReadAll(strings.NewReader(`{"kind":"fault","t":"2026-12-03T13:00:00Z","fault":"kill","target":"n1","phase":"start"}`))
	if err != nil || len(lines) != 1 || lines[0].Fault.Target != "n1" {
		t.Fatalf("lines %+v err %v", lines, err)
	}
}

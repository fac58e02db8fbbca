package conformance_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/conformance"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// These tests break our server on purpose, with middleware around the real handler, and check
// that the suite names what is broken.

// TestSuiteReportsASequenceGap: the server never sends event 4, neither in streams nor in
// replays.
func TestSuiteReportsASequenceGap(t *testing.T) {
	base := serve(t, func(h http.Handler) http.Handler {
		return rewriteEvents(h, func(e api.RuntimeEvent) []api.RuntimeEvent {
			if e.Sequence == 4 {
				return nil
			}
			return []api.RuntimeEvent{e}
		})
	})
	rep := run(t, conformance.Options{BaseURL: base})
	expectFailed(t, rep, "basic/event-sequence-contiguous", "event 4 has sequence 5, want 4")
	expectFailed(t, rep, "approval/event-sequence-contiguous", "event 4 has sequence 5, want 4")
	expectFailed(t, rep, "http/sse-replay", "SSE replay after=2: event 2 has sequence 5, want 4")
	// A gap is not two terminal events: the suite names the fault, not everything at once.
	expectPassed(t, rep, "basic/one-terminal-event", "basic/terminal-event-last", "basic/idempotency-reuse",
		"cancellation/event-sequence-contiguous") // a cancelled execution has 3 events: no event 4
}

// TestSuiteReportsTwoTerminalEvents: after its terminal event the server sends another one.
func TestSuiteReportsTwoTerminalEvents(t *testing.T) {
	base := serve(t, func(h http.Handler) http.Handler {
		return rewriteEvents(h, func(e api.RuntimeEvent) []api.RuntimeEvent {
			if e.Type != api.StandardEventTypeRunCompleted && e.Type != api.StandardEventTypeRunFailed && e.Type != api.StandardEventTypeRunCancelled {
				return []api.RuntimeEvent{e}
			}
			second := e
			second.Sequence = e.Sequence + 1
			second.ID = e.ExecutionID + ":" + strconv.FormatInt(second.Sequence, 10)
			second.Type = api.StandardEventTypeRunFailed
			second.Data = api.EventData{}
			if err := second.Data.FromRunFailedData(api.RunFailedData{Code: "PROVIDER_ERROR", Message: "a second ending"}); err != nil {
				panic(err)
			}
			return []api.RuntimeEvent{e, second}
		})
	})
	rep := run(t, conformance.Options{BaseURL: base})
	for _, sc := range []string{"basic", "approval", "input", "artifacts", "denial", "cancellation"} {
		expectFailed(t, rep, sc+"/one-terminal-event", "2 terminal events")
		expectFailed(t, rep, sc+"/terminal-event-matches-state", "")
	}
	expectPassed(t, rep, "basic/event-sequence-contiguous", "basic/idempotency-reuse", "basic/execution-succeeded")
}

// TestSuiteReportsMissingIdempotency: the server drops idempotencyKey, so a repeated start
// makes a new execution.
func TestSuiteReportsMissingIdempotency(t *testing.T) {
	base := serve(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.URL.Path == "/v1/executions" {
				var body map[string]any
				raw, _ := io.ReadAll(r.Body)
				if json.Unmarshal(raw, &body) == nil && body != nil {
					delete(body, "idempotencyKey")
					raw, _ = json.Marshal(body)
				}
				r.Body = io.NopCloser(bytes.NewReader(raw))
				r.ContentLength = int64(len(raw))
			}
			h.ServeHTTP(w, r)
		})
	})
	rep := run(t, conformance.Options{BaseURL: base})
	for _, sc := range []string{"basic", "approval", "input", "artifacts", "denial", "cancellation"} {
		expectFailed(t, rep, sc+"/idempotency-reuse", "the same request with the same key started exec_")
		expectFailed(t, rep, sc+"/idempotency-conflict", "want 409 IDEMPOTENCY_CONFLICT")
	}
	expectFailed(t, rep, "http/idempotency-reuse", "repeated start with the same key answered execution exec_")
	expectFailed(t, rep, "http/idempotency-conflict", "status 202, want 409")
	expectPassed(t, rep, "basic/event-sequence-contiguous", "basic/one-terminal-event", "basic/execution-cleanup")
}

// TestSuiteComparesArtifactsAsValues: the server sends artifact.created data with its keys in
// reverse order (as a server that keeps its own key order may); the listed artifact is the same
// value, so http/approval-with-artifact passes. Changing a value in the data makes it fail.
func TestSuiteComparesArtifactsAsValues(t *testing.T) {
	edit := func(change bool) func(api.RuntimeEvent) []api.RuntimeEvent {
		return func(e api.RuntimeEvent) []api.RuntimeEvent {
			if e.Type != api.StandardEventTypeArtifactCreated {
				return []api.RuntimeEvent{e}
			}
			raw, err := e.Data.MarshalJSON()
			if err != nil {
				panic(err)
			}
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(raw, &fields); err != nil {
				panic(err)
			}
			if change {
				fields["name"] = json.RawMessage(`"renamed.txt"`)
			}
			keys := slices.Sorted(maps.Keys(fields))
			slices.Reverse(keys)
			var b strings.Builder
			b.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%q:%s", k, fields[k])
			}
			b.WriteByte('}')
			if err := e.Data.UnmarshalJSON([]byte(b.String())); err != nil {
				panic(err)
			}
			return []api.RuntimeEvent{e}
		}
	}
	rep := run(t, conformance.Options{BaseURL: serve(t, func(h http.Handler) http.Handler { return rewriteEvents(h, edit(false)) })})
	expectPassed(t, rep, "http/approval-with-artifact")
	rep = run(t, conformance.Options{BaseURL: serve(t, func(h http.Handler) http.Handler { return rewriteEvents(h, edit(true)) })})
	expectFailed(t, rep, "http/approval-with-artifact", "want one whose data equals the listed artifact")
}

func expectFailed(t *testing.T, rep conformance.Report, name, detail string) {
	t.Helper()
	c, ok := rep.Check(name)
	switch {
	case !ok:
		t.Errorf("no check %s", name)
	case c.Passed || c.Skipped:
		t.Errorf("%s, want it failed", c)
	case !strings.Contains(c.Detail, detail):
		t.Errorf("%s: want the detail to contain %q", c, detail)
	}
	if rep.Passed() {
		t.Errorf("the report passed with %s failed", name)
	}
}

func expectPassed(t *testing.T, rep conformance.Report, names ...string) {
	t.Helper()
	for _, name := range names {
		if c, ok := rep.Check(name); !ok || !c.Passed {
			t.Errorf("%s: %v, want it passed", name, c)
		}
	}
}

// rewriteEvents passes every event the server sends — SSE messages and JSON replays — through
// edit, and sends what edit returns instead.
func rewriteEvents(h http.Handler, edit func(api.RuntimeEvent) []api.RuntimeEvent) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/events") {
			h.ServeHTTP(w, r)
			return
		}
		rw := &rewriter{w: w, edit: edit}
		h.ServeHTTP(rw, r)
		rw.finish()
	})
}

// rewriter decides at the first write: an SSE stream is rewritten message by message as it
// goes; any other answer is buffered and, if it is an EventList, rewritten at the end.
type rewriter struct {
	w          http.ResponseWriter
	edit       func(api.RuntimeEvent) []api.RuntimeEvent
	status     int
	decided    bool
	sse        bool
	buf        bytes.Buffer
	headerSent bool
}

func (rw *rewriter) Header() http.Header { return rw.w.Header() }

func (rw *rewriter) WriteHeader(status int) {
	if rw.status == 0 {
		rw.status = status
	}
	rw.decide()
}

func (rw *rewriter) decide() {
	if rw.decided {
		return
	}
	rw.decided = true
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	rw.sse = strings.HasPrefix(rw.w.Header().Get("Content-Type"), "text/event-stream")
	if rw.sse {
		// The rewrite changes the body's length: a stream sent whole (with a Content-Length,
		// proxy/events_sse.go) goes on chunked.
		rw.w.Header().Del("Content-Length")
		rw.w.WriteHeader(rw.status)
		rw.headerSent = true
	}
}

func (rw *rewriter) Write(p []byte) (int, error) {
	rw.decide()
	rw.buf.Write(p)
	if rw.sse {
		rw.forwardMessages()
	}
	return len(p), nil
}

// Flush makes the rewriter a flusher, so the server's SSE code writes through it.
func (rw *rewriter) Flush() {
	rw.decide()
	if rw.sse {
		rw.forwardMessages()
		http.NewResponseController(rw.w).Flush() //nolint:errcheck
	}
}

// forwardMessages rewrites and sends every complete SSE message in the buffer.
func (rw *rewriter) forwardMessages() {
	for {
		block, rest, ok := bytes.Cut(rw.buf.Bytes(), []byte("\n\n"))
		if !ok {
			return
		}
		out := rw.rewriteMessage(string(block))
		remaining := append([]byte(nil), rest...)
		rw.buf.Reset()
		rw.buf.Write(remaining)
		io.WriteString(rw.w, out) //nolint:errcheck
	}
}

func (rw *rewriter) rewriteMessage(block string) string {
	for _, line := range strings.Split(block, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var e api.RuntimeEvent
		if json.Unmarshal([]byte(data), &e) != nil {
			return block + "\n\n"
		}
		var b strings.Builder
		for _, out := range rw.edit(e) {
			j, _ := json.Marshal(out)
			fmt.Fprintf(&b, "event: %s\ndata: %s\nid: %d\n\n", out.Type, j, out.Sequence)
		}
		return b.String()
	}
	return block + "\n\n" // a comment or retry-only message
}

func (rw *rewriter) finish() {
	rw.decide()
	if rw.sse {
		return
	}
	body := rw.buf.Bytes()
	var list api.EventList
	if rw.status == http.StatusOK && json.Unmarshal(body, &list) == nil {
		edited := []api.RuntimeEvent{}
		for _, e := range list.Events {
			edited = append(edited, rw.edit(e)...)
		}
		list.Events = edited
		body, _ = json.Marshal(list)
	}
	rw.w.Header().Del("Content-Length")
	rw.w.WriteHeader(rw.status)
	rw.w.Write(body) //nolint:errcheck
}

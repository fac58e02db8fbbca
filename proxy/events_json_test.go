package proxy

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// rawEventList is an EventList whose events stay as the exact bytes the server wrote.
type rawEventList struct {
	Events     []json.RawMessage `json:"events"`
	NextCursor int64             `json:"nextCursor"`
}

func sequences(events []api.RuntimeEvent) []int64 {
	out := make([]int64, len(events))
	for i, ev := range events {
		out[i] = ev.Sequence
	}
	return out
}

func TestJSONReplay(t *testing.T) {
	ts := newTestServer(t, Options{})
	exec := ts.start("hello runtime", "")
	ts.waitTerminal(exec.ID)

	list := ts.eventList(exec.ID, "")
	wantTypes := []api.StandardEventType{
		api.StandardEventTypeRunQueued, api.StandardEventTypeRunStarted,
		api.StandardEventTypeOutputTextDelta, api.StandardEventTypeOutputTextDelta, api.StandardEventTypeOutputTextDelta,
		api.StandardEventTypeOutputTextDone, api.StandardEventTypeRunCompleted,
	}
	if len(list.Events) != len(wantTypes) || list.NextCursor != 7 {
		t.Fatalf("replay %+v", list)
	}
	for i, ev := range list.Events {
		if ev.Type != wantTypes[i] || ev.Sequence != int64(i+1) || ev.ExecutionID != exec.ID ||
			ev.ID != exec.ID+":"+itoa64(ev.Sequence) {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
	if typed(list.Events[6].Data.AsRunCompletedData()).FinalOutput != "Echo: hello runtime" {
		t.Fatalf("run.completed data %v", list.Events[6].Data)
	}

	// The replay writes each event exactly as the runtime stored it.
	stored, _, err := ts.rt.ListEvents(t.Context(), exec.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	raw := decodeBody[rawEventList](t, ts.get("/v1/executions/"+exec.ID+"/events"))
	for i, ev := range stored {
		if string(raw.Events[i]) != string(ev.JSON) {
			t.Fatalf("event %d on the wire %s, stored %s", i, raw.Events[i], ev.JSON)
		}
	}

	for _, tc := range []struct {
		query  string
		header map[string]string
		seqs   []int64
		next   int64
	}{
		{"?after=2", nil, []int64{3, 4, 5, 6, 7}, 7},
		{"?after=", nil, []int64{1, 2, 3, 4, 5, 6, 7}, 7},
		{"?after=007", nil, []int64{}, 7},
		{"?after=100", nil, []int64{}, 100}, // echoed, not clamped
		{"?limit=2", nil, []int64{1, 2}, 2},
		{"?after=2&limit=2", nil, []int64{3, 4}, 4},
		{"?limit=", nil, []int64{1, 2, 3, 4, 5, 6, 7}, 7},
		{"?after=1", map[string]string{"Last-Event-ID": "5"}, []int64{6, 7}, 7}, // the header wins
		{"?after=6", map[string]string{"Last-Event-ID": "0"}, []int64{1, 2, 3, 4, 5, 6, 7}, 7},
		{"?after=6", map[string]string{"Last-Event-ID": ""}, []int64{7}, 7}, // empty header = absent
		{"", map[string]string{"Accept": "application/json, text/event-stream;q=0"}, []int64{1, 2, 3, 4, 5, 6, 7}, 7},
	} {
		res := ts.do(request{method: http.MethodGet, path: "/v1/executions/" + exec.ID + "/events" + tc.query, header: tc.header})
		requireStatus(t, res, http.StatusOK)
		got := decodeBody[api.EventList](t, res)
		if seqs := sequences(got.Events); !equalInts(seqs, tc.seqs) || got.NextCursor != tc.next {
			t.Errorf("%s %v: sequences %v next %d, want %v next %d", tc.query, tc.header, seqs, got.NextCursor, tc.seqs, tc.next)
		}
	}

	head := ts.do(request{method: http.MethodHead, path: "/v1/executions/" + exec.ID + "/events", header: map[string]string{"Accept": "text/event-stream"}})
	if head.status != http.StatusOK || len(head.body) != 0 || head.header.Get("Content-Type") != contentTypeJSON {
		t.Fatalf("HEAD events = %s %v", head, head.header)
	}
}

func TestJSONReplayPageCap(t *testing.T) {
	ts := newTestServer(t, Options{MaxPageSize: 3})
	exec := ts.start("hello runtime", "")
	ts.waitTerminal(exec.ID)
	for query, want := range map[string][]int64{
		"":                 {1, 2, 3},
		"?limit=100":       {1, 2, 3},
		"?limit=2":         {1, 2},
		"?after=3":         {4, 5, 6},
		"?after=6&limit=3": {7},
	} {
		if got := sequences(ts.eventList(exec.ID, query).Events); !equalInts(got, want) {
			t.Errorf("%q: %v, want %v", query, got, want)
		}
	}
}

// TestCursorIsValidatedBeforeTheLookup covers the reference's invalid cursors (with the SSE
// Accept, on a missing execution: still a JSON 400) and our stricter syntax.
func TestCursorIsValidatedBeforeTheLookup(t *testing.T) {
	ts := newTestServer(t, Options{})
	invalidAfter := validationBody("after must be a non-negative integer", "parameter", "after", reasonSequence)
	for _, accept := range []string{"text/event-stream", "application/json"} {
		for _, after := range []string{"-1", "1.5", "not-a-number", "9007199254740992", "%2B5", "0x10", "1e2", "%20", "%zz"} {
			res := ts.do(request{
				method: http.MethodGet,
				path:   "/v1/executions/missing/events?after=" + after,
				header: map[string]string{"Accept": accept},
			})
			requireStatusBody(t, res, http.StatusBadRequest, invalidAfter)
		}
		res := ts.do(request{
			method: http.MethodGet,
			path:   "/v1/executions/missing/events",
			header: map[string]string{"Accept": accept, "Last-Event-ID": "-3"},
		})
		requireStatusBody(t, res, http.StatusBadRequest,
			validationBody("Last-Event-ID must be a non-negative integer", "header", "Last-Event-ID", reasonSequence))
		// A valid cursor on a missing execution: a JSON 404, before any SSE header.
		res = ts.do(request{
			method: http.MethodGet,
			path:   "/v1/executions/missing/events?after=9007199254740991",
			header: map[string]string{"Accept": accept},
		})
		requireStatusBody(t, res, http.StatusNotFound, `{"code":"NOT_FOUND","message":"Execution not found: missing"}`)
	}
	for _, limit := range []string{"0", "-1", "x", "1.5"} {
		requireStatusBody(t, ts.get("/v1/executions/missing/events?limit="+limit), http.StatusBadRequest,
			validationBody("limit must be a positive integer", "parameter", "limit", reasonPageSize))
	}
}

// TestStreamValidatesLimitLikeTheReplay: an event stream takes no pages, but a `limit` it is
// given is checked exactly as the JSON replay checks it, on a missing execution and on one that
// exists (where the stream would otherwise open), so one URL never means 400 in one form and 200
// in the other. A valid limit is accepted and does not cut the stream.
func TestStreamValidatesLimitLikeTheReplay(t *testing.T) {
	ts := newTestServer(t, Options{})
	exec := ts.start("hello runtime", "")
	ts.waitTerminal(exec.ID)
	const invalidLimit = `{"code":"VALIDATION_ERROR","details":{"errors":[{"parameter":"limit","reason":"must be an integer of at least 1"}]},"message":"limit must be a positive integer"}`
	for _, id := range []string{"missing", exec.ID} {
		for _, limit := range []string{"0", "-1", "x", "1.5", "%zz"} {
			for _, accept := range []string{"text/event-stream", "application/json"} {
				res := ts.do(request{
					method: http.MethodGet,
					path:   "/v1/executions/" + id + "/events?limit=" + limit,
					header: map[string]string{"Accept": accept},
				})
				requireStatusBody(t, res, http.StatusBadRequest, invalidLimit)
			}
		}
	}
	s := ts.openStream(exec.ID, "?limit=1", nil)
	defer s.close()
	var seqs []int64
	for ev, ok := s.next(); ok; ev, ok = s.next() {
		seqs = append(seqs, ev.Sequence)
	}
	if want := sequences(ts.eventList(exec.ID, "").Events); !equalInts(seqs, want) {
		t.Fatalf("stream with limit=1: %v, want every event %v", seqs, want)
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func itoa64(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// logStream is an open conversation or tenant stream, read message by message.
type logStream struct {
	t      *testing.T
	resp   *http.Response
	cancel context.CancelFunc
	next   func() (sse.Event, error, bool)
	stop   func()
}

func (ts *testServer) openLogStream(path string, header map[string]string) *logStream {
	ts.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	h := map[string]string{"Accept": "text/event-stream"}
	for k, v := range header {
		h[k] = v
	}
	resp, err := ts.srv.Client().Do(ts.newHTTPRequest(ctx, request{method: http.MethodGet, path: path, header: h}))
	if err != nil {
		cancel()
		ts.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		ts.t.Fatalf("%s answered %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	next, stop := iter.Pull2(sse.Read(resp.Body, nil))
	s := &logStream{t: ts.t, resp: resp, cancel: cancel, next: next, stop: stop}
	ts.t.Cleanup(s.close)
	return s
}

func (s *logStream) close() {
	s.stop()
	s.cancel()
	s.resp.Body.Close()
}

// logMessage is one message of a log stream: its id (the cursor), type and event.
type logMessage struct {
	id    string
	typ   string
	event api.RuntimeEvent
	data  string
}

func (s *logStream) read() logMessage {
	s.t.Helper()
	raw, err, ok := s.next()
	if !ok || err != nil {
		s.t.Fatalf("the stream ended: %v", err)
	}
	m := logMessage{id: raw.LastEventID, typ: raw.Type, data: raw.Data}
	if m.typ != string(gapEventType) {
		if err := json.Unmarshal([]byte(raw.Data), &m.event); err != nil {
			s.t.Fatalf("event data %q: %v", raw.Data, err)
		}
		if m.typ != string(m.event.Type) {
			s.t.Fatalf("event: %q, data of type %q", m.typ, m.event.Type)
		}
	}
	return m
}

// readUntil reads messages until n run.completed events came.
func (s *logStream) readUntil(completed int) []logMessage {
	s.t.Helper()
	var out []logMessage
	for completed > 0 {
		m := s.read()
		out = append(out, m)
		if m.event.Type == api.StandardEventTypeRunCompleted {
			completed--
		}
	}
	return out
}

// startIn starts a mock execution in conversation conv (as tenant, when set).
func (ts *testServer) startIn(tenant, conv, input string) api.Execution {
	ts.t.Helper()
	res := ts.as(tenant, request{method: http.MethodPost, path: "/v1/executions",
		body: ptr(fmt.Sprintf(`{"conversationId":%q,"providerId":"mock","input":%q}`, conv, input))})
	requireStatus(ts.t, res, http.StatusAccepted)
	return decodeBody[api.Execution](ts.t, res)
}

// checkOrder checks that each execution's events come in sequence order, without a gap or a
// duplicate, and that the ids are distinct cursors.
func checkOrder(t *testing.T, msgs []logMessage) {
	t.Helper()
	last := map[string]int64{}
	ids := map[string]bool{}
	for _, m := range msgs {
		if m.event.Sequence != last[m.event.ExecutionID]+1 {
			t.Fatalf("%s:%d follows sequence %d", m.event.ExecutionID, m.event.Sequence, last[m.event.ExecutionID])
		}
		last[m.event.ExecutionID] = m.event.Sequence
		if ids[m.id] || m.id == "" || m.id == fmt.Sprint(m.event.Sequence) {
			t.Fatalf("message id %q: want a distinct cursor per message", m.id)
		}
		ids[m.id] = true
	}
}

func TestConversationStreamFollowsEveryExecutionAndResumesExactly(t *testing.T) {
	ts := newTestServer(t, Options{})
	conv := ts.createConversation()
	other := ts.createConversation()
	s := ts.openLogStream("/v1/conversations/"+conv+"/events", nil)
	ts.startIn("", other, "elsewhere")
	for i := range 3 {
		ts.startIn("", conv, fmt.Sprintf("turn %d", i))
	}
	msgs := s.readUntil(3)
	checkOrder(t, msgs)
	execs := map[string]bool{}
	for _, m := range msgs {
		if m.event.ExecutionID == "" {
			t.Fatalf("message without an event: %+v", m)
		}
		execs[m.event.ExecutionID] = true
	}
	if len(execs) != 3 {
		t.Fatalf("%d executions on the conversation's stream; want its 3 (and not the other conversation's)", len(execs))
	}
	// The stream stays open: a fourth execution arrives on it.
	fourth := ts.startIn("", conv, "later")
	more := s.readUntil(1)
	if more[0].event.ExecutionID != fourth.ID {
		t.Fatalf("the next message is of %s; want the new execution %s", more[0].event.ExecutionID, fourth.ID)
	}
	all := append(msgs, more...)

	// Resuming from any message's id (header or query) gives exactly what followed it.
	for _, at := range []int{0, 5, len(all) - 2} {
		for _, how := range []string{"header", "query"} {
			path, header := "/v1/conversations/"+conv+"/events", map[string]string{}
			if how == "header" {
				header["Last-Event-ID"] = all[at].id
				path += "?after=0" // the header wins
			} else {
				path += "?after=" + url.QueryEscape(all[at].id)
			}
			r := ts.openLogStream(path, header)
			for _, want := range all[at+1:] {
				if got := r.read(); got.id != want.id || got.data != want.data {
					t.Fatalf("resume (%s) after message %d: got %s %s; want %s %s", how, at, got.id, got.data, want.id, want.data)
				}
			}
			r.close()
		}
	}

	// The JSON replay pages through the same messages.
	var replay []api.RuntimeEvent
	cursor := "0"
	for {
		res := ts.get("/v1/conversations/" + conv + "/events?limit=3&after=" + url.QueryEscape(cursor))
		requireStatus(t, res, http.StatusOK)
		page := decodeBody[api.StreamEventList](t, res)
		replay = append(replay, page.Events...)
		if len(page.Events) == 0 {
			if page.NextCursor != cursor {
				t.Fatalf("an empty page moved the cursor from %s to %s", cursor, page.NextCursor)
			}
			break
		}
		cursor = page.NextCursor
	}
	if len(replay) != len(all) {
		t.Fatalf("replay has %d events; the stream had %d", len(replay), len(all))
	}
	for i := range all {
		if replay[i].ID != all[i].event.ID {
			t.Fatalf("replay event %d is %s; the stream's is %s", i, replay[i].ID, all[i].event.ID)
		}
	}
	if cursor != all[len(all)-1].id {
		t.Errorf("the replay's last cursor %s; the stream's last id %s", cursor, all[len(all)-1].id)
	}
}

func TestTenantStreamsNeverCrossAndFiltersNarrow(t *testing.T) {
	ts := newTenantServer(t, 0)
	convOf := func(tenant string) string {
		res := ts.as(tenant, request{method: http.MethodPost, path: "/v1/conversations"})
		requireStatus(t, res, http.StatusCreated)
		return decodeBody[api.Conversation](t, res).ID
	}
	alice, bob := convOf("alice"), convOf("bob")
	aliceAll := ts.openLogStream("/v1/events", map[string]string{tenantHeader: "alice"})
	aliceLife := ts.openLogStream("/v1/events?lifecycle=true", map[string]string{tenantHeader: "alice"})
	bobDone := ts.openLogStream("/v1/events?type=run.completed,run.failed", map[string]string{tenantHeader: "bob"})
	// bob asking alice's conversation through the filter narrows his own stream to nothing of it.
	bobPeek := ts.openLogStream("/v1/events?conversation="+alice, map[string]string{tenantHeader: "bob"})

	a1 := ts.startIn("alice", alice, "one")
	b1 := ts.startIn("bob", bob, "two")
	a2 := ts.startIn("alice", alice, "three")

	for _, m := range aliceAll.readUntil(2) {
		if id := m.event.ExecutionID; id != a1.ID && id != a2.ID {
			t.Fatalf("alice's stream carried %s", id)
		}
	}
	for _, m := range aliceLife.readUntil(2) {
		if !strings.HasPrefix(string(m.event.Type), "run.") && !strings.HasPrefix(string(m.event.Type), "action.") {
			t.Fatalf("the lifecycle stream carried %s", m.event.Type)
		}
		if m.event.ExecutionID == b1.ID {
			t.Fatal("alice's lifecycle stream carried bob's execution")
		}
	}
	if m := bobDone.read(); m.event.ExecutionID != b1.ID || m.event.Type != api.StandardEventTypeRunCompleted {
		t.Fatalf("bob's terminal stream: %+v", m)
	}
	// bob's peek gets nothing; an execution of his own in alice's conversation cannot exist,
	// so the proof is a JSON page over the same span: empty, with a cursor that moved.
	res := ts.as("bob", request{method: http.MethodGet, path: "/v1/events?after=0&conversation=" + alice})
	requireStatus(t, res, http.StatusOK)
	if page := decodeBody[api.StreamEventList](t, res); len(page.Events) != 0 {
		t.Fatalf("bob's page of alice's conversation has %d events", len(page.Events))
	}
	bobPeek.close()
	// Alice's conversation stream is not bob's to open.
	res = ts.as("bob", request{method: http.MethodGet, path: "/v1/conversations/" + alice + "/events"})
	requireStatus(t, res, http.StatusNotFound)
	// A cursor of alice's stream is refused on bob's.
	res = ts.as("alice", request{method: http.MethodGet, path: "/v1/events?after=0&limit=1"})
	requireStatus(t, res, http.StatusOK)
	cursor := decodeBody[api.StreamEventList](t, res).NextCursor
	res = ts.as("bob", request{method: http.MethodGet, path: "/v1/events?after=" + url.QueryEscape(cursor)})
	requireStatus(t, res, http.StatusBadRequest)
}

func TestTenantStreamWithoutCursorStartsNow(t *testing.T) {
	ts := newTestServer(t, Options{})
	conv := ts.createConversation()
	old := ts.startIn("", conv, "before")
	ts.waitTerminal(old.ID)
	res := ts.get("/v1/events")
	requireStatus(t, res, http.StatusOK)
	now := decodeBody[api.StreamEventList](t, res)
	if len(now.Events) != 0 || now.NextCursor == "0" {
		t.Fatalf("a page without a cursor = %d events, cursor %s; want none and the cursor of now", len(now.Events), now.NextCursor)
	}
	s := ts.openLogStream("/v1/events", nil)
	fresh := ts.startIn("", conv, "after")
	if m := s.read(); m.event.ExecutionID != fresh.ID || m.event.Sequence != 1 {
		t.Fatalf("the first message is %s:%d; want the new execution's first event", m.event.ExecutionID, m.event.Sequence)
	}
	// From the cursor of now, the JSON replay has exactly the new execution.
	ts.waitTerminal(fresh.ID)
	res = ts.get("/v1/events?after=" + url.QueryEscape(now.NextCursor))
	page := decodeBody[api.StreamEventList](t, res)
	if len(page.Events) == 0 || page.Events[0].ExecutionID != fresh.ID {
		t.Fatalf("after the cursor of now: %+v", page.Events)
	}
}

func TestStreamRequestsRefusedBeforeAnythingOpens(t *testing.T) {
	ts := newTestServer(t, Options{})
	conv := ts.createConversation()
	other := ts.createConversation()
	ts.waitTerminal(ts.startIn("", other, "x").ID)
	res := ts.get("/v1/conversations/" + other + "/events?after=0&limit=1")
	otherCursor := decodeBody[api.StreamEventList](t, res).NextCursor
	res = ts.get("/v1/events?after=0&limit=1")
	tenantCursor := decodeBody[api.StreamEventList](t, res).NextCursor
	stream := map[string]string{"Accept": "text/event-stream"}
	for _, c := range []struct {
		name, path string
		header     map[string]string
		status     int
		where      string // the parameter or header the details name
	}{
		{"malformed after", "/v1/conversations/" + conv + "/events?after=12", nil, 400, "after"},
		{"malformed after (SSE)", "/v1/conversations/" + conv + "/events?after=zz-1", stream, 400, "after"},
		{"another conversation's cursor", "/v1/conversations/" + conv + "/events?after=" + otherCursor, stream, 400, "after"},
		{"the tenant stream's cursor on a conversation", "/v1/conversations/" + other + "/events?after=" + tenantCursor, nil, 400, "after"},
		{"a conversation's cursor on the tenant stream", "/v1/events?after=" + otherCursor, stream, 400, "after"},
		{"malformed Last-Event-ID", "/v1/events", map[string]string{"Accept": "text/event-stream", "Last-Event-ID": "7"}, 400, "Last-Event-ID"},
		{"unknown filter", "/v1/events?lifecycel=true", stream, 400, "lifecycel"},
		{"conversation filter on a conversation", "/v1/conversations/" + conv + "/events?conversation=" + conv, nil, 400, "conversation"},
		{"unknown type", "/v1/events?type=run.done", stream, 400, "type"},
		{"lifecycle not a boolean", "/v1/events?lifecycle=yes", nil, 400, "lifecycle"},
		{"empty provider", "/v1/events?provider=,", nil, 400, "provider"},
		{"bad limit", "/v1/events?limit=0", nil, 400, "limit"},
		{"unknown conversation", "/v1/conversations/conv_00000000000000000000000000000000/events", stream, 404, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			opened := ts.streams.opened.Load()
			res := ts.do(request{method: http.MethodGet, path: c.path, header: c.header})
			if res.status != c.status || res.header.Get("Content-Type") != contentTypeJSON {
				t.Fatalf("got %s; want %d and a Problem", res, c.status)
			}
			p := decodeBody[api.Problem](t, res)
			if c.where != "" && !strings.Contains(string(res.body), fmt.Sprintf("%q", c.where)) {
				t.Errorf("the Problem does not name %s: %s", c.where, res.body)
			}
			if c.status == 400 && p.Code != "VALIDATION_ERROR" || c.status == 404 && p.Code != "NOT_FOUND" {
				t.Errorf("code %s", p.Code)
			}
			if ts.streams.opened.Load() != opened {
				t.Error("a stream was opened")
			}
		})
	}
}

func TestExpiredCursorIsAnsweredNeverSkipped(t *testing.T) {
	ts := newTestServer(t, Options{})
	conv := ts.createConversation()
	first := ts.startIn("", conv, "old")
	ts.waitTerminal(first.ID)
	res := ts.get("/v1/conversations/" + conv + "/events?after=0&limit=2")
	oldCursor := decodeBody[api.StreamEventList](t, res).NextCursor
	time.Sleep(5 * time.Millisecond)
	if _, err := backend.StreamHub(ts.rt).Log().TrimLog(time.Now()); err != nil {
		t.Fatal(err)
	}
	second := ts.startIn("", conv, "new")
	ts.waitTerminal(second.ID)

	// JSON: 410 CURSOR_EXPIRED, and where to resume.
	res = ts.get("/v1/conversations/" + conv + "/events?after=" + url.QueryEscape(oldCursor))
	requireStatus(t, res, http.StatusGone)
	p := decodeBody[api.Problem](t, res)
	resume, _ := (*p.Details)["resumeAfter"].(string)
	if p.Code != "CURSOR_EXPIRED" || resume == "" {
		t.Fatalf("Problem %s", res.body)
	}
	res = ts.get("/v1/conversations/" + conv + "/events?after=" + url.QueryEscape(resume))
	requireStatus(t, res, http.StatusOK)
	page := decodeBody[api.StreamEventList](t, res)
	if len(page.Events) == 0 || page.Events[0].ExecutionID != second.ID || page.Events[0].Sequence != 1 {
		t.Fatalf("after resumeAfter: %+v", page.Events)
	}

	// SSE: a first stream.gap message says so, then the events that are kept.
	s := ts.openLogStream("/v1/conversations/"+conv+"/events", map[string]string{"Last-Event-ID": oldCursor})
	gap := s.read()
	var data api.StreamGap
	if err := json.Unmarshal([]byte(gap.data), &data); err != nil || gap.typ != "stream.gap" || gap.id != resume ||
		data.RequestedCursor != oldCursor || data.ResumeAfter != resume {
		t.Fatalf("first message %+v (%v); want stream.gap resuming after %s", gap, err, resume)
	}
	if m := s.read(); m.event.ExecutionID != second.ID || m.event.Sequence != 1 {
		t.Fatalf("after the gap: %s:%d", m.event.ExecutionID, m.event.Sequence)
	}
	// after=0 asks for whatever is kept: no gap message.
	s0 := ts.openLogStream("/v1/conversations/"+conv+"/events?after=0", nil)
	if m := s0.read(); m.typ == "stream.gap" || m.event.ExecutionID != second.ID {
		t.Fatalf("from 0: %+v", m)
	}
}

// When a stream's request is wrong in several ways, the refusal is the first in the protocol's
// order: the after cursor, the Last-Event-ID, the page size, the filters, and only then the
// conversation (a bad request of an unknown conversation is a 400, as for an execution).
func TestStreamRefusalsComeInTheProtocolsOrder(t *testing.T) {
	ts := newTestServer(t, Options{})
	conv := ts.createConversation()
	other := ts.createConversation()
	ts.waitTerminal(ts.startIn("", other, "x").ID)
	otherCursor := decodeBody[api.StreamEventList](t, ts.get("/v1/conversations/"+other+"/events?after=0&limit=1")).NextCursor
	unknown := "/v1/conversations/conv_00000000000000000000000000000000/events"
	for _, c := range []struct {
		name, path, lastEventID string
		names                   string // the details' entry
	}{
		{"a malformed after before a bad limit", "/v1/conversations/" + conv + "/events?after=12&limit=0", "", `"parameter":"after"`},
		{"another stream's after before a malformed Last-Event-ID", "/v1/conversations/" + conv + "/events?after=" + otherCursor, "7", `"parameter":"after"`},
		{"a malformed Last-Event-ID before a bad limit", "/v1/events?limit=0", "7", `"header":"Last-Event-ID"`},
		{"a bad limit before a bad filter", "/v1/events?limit=0&type=run.done", "", `"parameter":"limit"`},
		{"a bad limit of an unknown conversation", unknown + "?limit=0", "", `"parameter":"limit"`},
		{"a bad filter of an unknown conversation", unknown + "?type=run.done", "", `"parameter":"type"`},
		{"a malformed after of an unknown conversation", unknown + "?after=12", "", `"parameter":"after"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			header := map[string]string{"Accept": "text/event-stream"}
			if c.lastEventID != "" {
				header["Last-Event-ID"] = c.lastEventID
			}
			res := ts.do(request{method: http.MethodGet, path: c.path, header: header})
			if res.status != http.StatusBadRequest || !strings.Contains(string(res.body), c.names) {
				t.Fatalf("got %s; want 400 naming %s", res, c.names)
			}
		})
	}
}

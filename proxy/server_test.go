package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/openapi"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The tests below run real HTTP over loopback: an httptest.Server serving the Handler over a
// real runtime (a bbolt file in t.TempDir()) with the mock provider. Every response they read
// through testServer.do is also validated against openapi/harness.yaml.

// testTimeout bounds a whole scenario so that a bug shows as a failure, not a hung test. It is
// not a performance threshold.
const testTimeout = 30 * time.Second

type testServer struct {
	t       *testing.T
	rt      *backend.Runtime
	handler *Handler
	srv     *httptest.Server
	streams *countingObserver
	conns   *connTracker // nil unless made by newTestServer
}

func newTestServer(t *testing.T, opts Options) *testServer {
	t.Helper()
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		t.Fatal(err)
	}
	streams := &countingObserver{}
	if opts.Observer == nil {
		opts.Observer = streams
	}
	h := New(rt, opts)
	srv := httptest.NewUnstartedServer(h)
	conns := &connTracker{Listener: srv.Listener}
	srv.Listener = conns
	srv.Start()
	t.Cleanup(func() {
		h.Shutdown() // open streams end, so Close does not wait for them
		h.WaitDetached(testTimeout)
		srv.Close()
		_ = rt.Close()
	})
	return &testServer{t: t, rt: rt, handler: h, srv: srv, streams: streams, conns: conns}
}

// connTracker remembers the connections it accepts, so that a test can cut them all, those of
// detached streams too, which httptest.Server.CloseClientConnections no longer knows.
type connTracker struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *connTracker) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

// cutConnections closes every connection the server accepted, as a network failure would.
func (ts *testServer) cutConnections() {
	ts.conns.mu.Lock()
	defer ts.conns.mu.Unlock()
	for _, c := range ts.conns.conns {
		_ = c.Close()
	}
	ts.conns.conns = nil
}

// result is a fully read response.
type result struct {
	status  int
	header  http.Header
	body    []byte
	trailer http.Header // read after the whole body
}

func (r result) String() string { return fmt.Sprintf("%d %s", r.status, r.body) }

// request is what a test sends.
type request struct {
	method string
	path   string // escaped path and query, sent as is
	body   *string
	header map[string]string
}

func (ts *testServer) newHTTPRequest(ctx context.Context, req request) *http.Request {
	ts.t.Helper()
	var body io.Reader
	if req.body != nil {
		body = strings.NewReader(*req.body)
	}
	r, err := http.NewRequestWithContext(ctx, req.method, ts.srv.URL+req.path, body)
	if err != nil {
		ts.t.Fatal(err)
	}
	for k, v := range req.header {
		r.Header.Set(k, v)
	}
	return r
}

// do sends a request, reads the whole response and validates it against the OpenAPI document.
func (ts *testServer) do(req request) result {
	ts.t.Helper()
	res := ts.send(req)
	validateResponse(ts.t, req, res)
	return res
}

// send is do without the OpenAPI validation, for paths the document does not have.
func (ts *testServer) send(req request) result {
	ts.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp, err := ts.srv.Client().Do(ts.newHTTPRequest(ctx, req))
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return result{status: resp.StatusCode, header: resp.Header, body: body, trailer: resp.Trailer}
}

func (ts *testServer) get(path string) result {
	return ts.do(request{method: http.MethodGet, path: path})
}

func (ts *testServer) post(path, body string) result {
	return ts.do(request{method: http.MethodPost, path: path, body: &body})
}

// requireStatusBody asserts the exact status and the exact body bytes.
func requireStatusBody(t *testing.T, res result, status int, body string) {
	t.Helper()
	if res.status != status || string(res.body) != body {
		t.Fatalf("got %s\nwant %d %s", res, status, body)
	}
	if ct := res.header.Get("Content-Type"); ct != contentTypeJSON {
		t.Fatalf("Content-Type = %q, want %q", ct, contentTypeJSON)
	}
}

func requireStatus(t *testing.T, res result, status int) {
	t.Helper()
	if res.status != status {
		t.Fatalf("got %s, want status %d", res, status)
	}
}

func decodeBody[T any](t *testing.T, res result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(res.body, &v); err != nil {
		t.Fatalf("decoding %s: %v", res.body, err)
	}
	return v
}

func (ts *testServer) createConversation() string {
	ts.t.Helper()
	res := ts.post("/v1/conversations", "")
	requireStatus(ts.t, res, http.StatusCreated)
	return decodeBody[api.Conversation](ts.t, res).ID
}

// start starts a mock execution in a new conversation and returns it.
func (ts *testServer) start(input string, config string, capabilities ...string) api.Execution {
	ts.t.Helper()
	conv := ts.createConversation()
	body := fmt.Sprintf(`{"conversationId":%q,"providerId":"mock","input":%q`, conv, input)
	if config != "" {
		body += `,"config":` + config
	}
	if len(capabilities) > 0 {
		caps, _ := json.Marshal(capabilities)
		body += `,"requiredCapabilities":` + string(caps)
	}
	res := ts.post("/v1/executions", body+"}")
	requireStatus(ts.t, res, http.StatusAccepted)
	return decodeBody[api.Execution](ts.t, res)
}

func (ts *testServer) execution(id string) api.Execution {
	ts.t.Helper()
	res := ts.get("/v1/executions/" + id)
	requireStatus(ts.t, res, http.StatusOK)
	return decodeBody[api.Execution](ts.t, res)
}

func (ts *testServer) eventList(id, query string) api.EventList {
	ts.t.Helper()
	res := ts.get("/v1/executions/" + id + "/events" + query)
	requireStatus(ts.t, res, http.StatusOK)
	return decodeBody[api.EventList](ts.t, res)
}

// waitTerminal follows the execution's stream to its end and returns the final snapshot.
func (ts *testServer) waitTerminal(id string) api.Execution {
	ts.t.Helper()
	s := ts.openStream(id, "", nil)
	defer s.close()
	for {
		if _, ok := s.next(); !ok {
			break
		}
	}
	return ts.execution(id)
}

// waitForEvent follows the stream until an event of the given type and returns it.
func (ts *testServer) waitForEvent(id string, typ api.StandardEventType) api.RuntimeEvent {
	ts.t.Helper()
	s := ts.openStream(id, "", nil)
	defer s.close()
	for {
		ev, ok := s.next()
		if !ok {
			ts.t.Fatalf("stream of %s ended before %s", id, typ)
		}
		if ev.Type == typ {
			return ev
		}
	}
}

// sseClient is an open SSE response read with go-sse's parser.
type sseClient struct {
	t      *testing.T
	resp   *http.Response
	cancel context.CancelFunc
	events func() (sse.Event, error, bool)
	stop   func()
}

func (ts *testServer) openStream(id, query string, header map[string]string) *sseClient {
	ts.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	if header == nil {
		header = map[string]string{}
	}
	header["Accept"] = "text/event-stream"
	req := ts.newHTTPRequest(ctx, request{method: http.MethodGet, path: "/v1/executions/" + id + "/events" + query, header: header})
	resp, err := ts.srv.Client().Do(req)
	if err != nil {
		cancel()
		ts.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		ts.t.Fatalf("stream answered %d", resp.StatusCode)
	}
	next, stop := iter.Pull2(sse.Read(resp.Body, nil))
	return &sseClient{t: ts.t, resp: resp, cancel: cancel, events: next, stop: stop}
}

// next returns the next event, or false at the end of the stream.
func (s *sseClient) next() (api.RuntimeEvent, bool) {
	s.t.Helper()
	raw, err, ok := s.events()
	if !ok {
		return api.RuntimeEvent{}, false
	}
	if err != nil {
		s.t.Fatalf("reading stream: %v", err)
	}
	var ev api.RuntimeEvent
	if err := json.Unmarshal([]byte(raw.Data), &ev); err != nil {
		s.t.Fatalf("event data %q: %v", raw.Data, err)
	}
	if raw.Type != string(ev.Type) || raw.LastEventID != fmt.Sprint(ev.Sequence) {
		s.t.Fatalf("framing event=%q id=%q does not match %+v", raw.Type, raw.LastEventID, ev)
	}
	return ev, true
}

// close drops the connection, as a client that goes away does.
func (s *sseClient) close() {
	s.stop()
	s.cancel()
	s.resp.Body.Close()
}

// countingObserver counts open streams.
type countingObserver struct {
	open, opened atomic.Int64
}

func (c *countingObserver) StreamOpened() { c.open.Add(1); c.opened.Add(1) }
func (c *countingObserver) StreamClosed() { c.open.Add(-1) }

// readLines reads an SSE body line by line (comments included, which sse.Read skips).
func readLines(t *testing.T, body io.Reader, until func(line string) bool) []string {
	t.Helper()
	var lines []string
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if until != nil && until(sc.Text()) {
			return lines
		}
	}
	if err := sc.Err(); err != nil && !strings.Contains(err.Error(), "closed") {
		t.Fatalf("reading body: %v", err)
	}
	return lines
}

// --- OpenAPI validation -------------------------------------------------------------------

var (
	specOnce      sync.Once
	specValidator validator.Validator
	specErr       error
	specMu        sync.Mutex
)

func openAPIValidator(t *testing.T) validator.Validator {
	t.Helper()
	specOnce.Do(func() {
		doc, err := libopenapi.NewDocument(openapi.Document)
		if err != nil {
			specErr = err
			return
		}
		v, errs := validator.NewValidator(doc, config.WithPathTree(regexRouteLookup{}))
		if len(errs) > 0 {
			specErr = fmt.Errorf("building the validator: %v", errs)
			return
		}
		specValidator = v
	})
	if specErr != nil {
		t.Fatal(specErr)
	}
	return specValidator
}

// regexRouteLookup makes the validator route every request with its template regexes, which
// prefer a path that has the request's method. Its default radix tree cannot: it reads
// `{id}:cancel` as a literal segment, so POST /v1/executions/x:cancel lands on
// /v1/executions/{id} (GET only) and every cancel and respond would fail as "path not found".
type regexRouteLookup struct{}

func (regexRouteLookup) Lookup(string) (*v3.PathItem, string, bool) { return nil, "", false }

// documentedMethod is the method the document declares for a path that answered 405, so the
// 405 is validated against that operation's MethodNotAllowed response.
func documentedMethod(path string) string {
	switch resolve(path).res {
	case resConversations, resExecutions, resCancel, resRespond:
		return http.MethodPost
	default:
		return http.MethodGet
	}
}

// validateResponse checks a real response against openapi/harness.yaml: status declared for
// the operation, body matching its schema, declared headers.
func validateResponse(t *testing.T, req request, res result) {
	t.Helper()
	if problems := checkResponse(t, req, res); len(problems) > 0 {
		t.Fatalf("%s %s → %s\ndoes not match openapi/harness.yaml:\n%s", req.method, req.path, res, strings.Join(problems, "\n"))
	}
}

// checkResponse returns what does not match the document, if anything.
func checkResponse(t *testing.T, req request, res result) []string {
	t.Helper()
	path, query, _ := strings.Cut(req.path, "?")
	// The document writes the custom methods with a literal colon; an encoded one is the same
	// route (the reference's framework decodes it too).
	path = strings.NewReplacer("%3A", ":", "%3a", ":").Replace(path)
	method := req.method
	if res.status == http.StatusMethodNotAllowed {
		method = documentedMethod(path)
	}
	if method == http.MethodHead {
		method = http.MethodGet
	}
	// A POST whose custom-method suffix is missing is answered as the operation it was meant
	// for (the reference's 400 "Path parameter suffix is invalid"); validate it as that one.
	if method == http.MethodPost {
		switch resolve(path).res {
		case resExecution:
			path += cancelSuffix
		case resActionWithoutVerb:
			path += respondSuffix
		}
	}
	if query != "" {
		path += "?" + query
	}
	httpReq, err := http.NewRequest(method, "http://127.0.0.1:4310"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range req.header {
		httpReq.Header.Set(k, v)
	}
	httpResp := &http.Response{
		StatusCode: res.status,
		Header:     res.header,
		Body:       io.NopCloser(bytes.NewReader(res.body)),
		Request:    httpReq,
	}
	specMu.Lock()
	ok, errs := openAPIValidator(t).ValidateHttpResponse(httpReq, httpResp)
	specMu.Unlock()
	if ok {
		return nil
	}
	var msgs []string
	for _, e := range errs {
		msg := e.Message + ": " + e.Reason
		for _, se := range e.SchemaValidationErrors {
			msg += " [" + se.FieldPath + ": " + se.Reason + "]"
		}
		msgs = append(msgs, msg)
	}
	if len(msgs) == 0 {
		msgs = append(msgs, "invalid")
	}
	return msgs
}

// validationBody is the exact body of a VALIDATION_ERROR whose details name one field: kind is
// "pointer" (into the body), "parameter" (query) or "header".
func validationBody(message, kind, where, reason string) string {
	details := api.JSONObject{"errors": []any{map[string]any{kind: where, "reason": reason}}}
	raw, err := json.Marshal(api.Problem{Code: "VALIDATION_ERROR", Message: message, Details: &details})
	if err != nil {
		panic(err)
	}
	return string(raw)
}

const (
	reasonNotJSON      = "not valid JSON"
	reasonBodyRequired = "a JSON body is required"
)

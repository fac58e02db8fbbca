package sdk_test

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// netProxy is a reverse proxy in front of the real server that behaves like a bad network on
// the requests its rules pick: it falls silent with the connection open, cuts answers short,
// loses, repeats and reorders event frames, answers 502 and 504 like a gateway, and answers
// slowly. It knows nothing of the SDK; it sees HTTP and SSE frames, nothing else.
type netProxy struct {
	URL      string
	upstream *httputil.ReverseProxy

	mu    sync.Mutex
	rules []*netRule
	calls map[string]int // requests seen per route (see routeOf)
	// left counts, per rule name, the connections the client gave up on while the proxy held
	// them open.
	left map[string]int
}

// netRule applies fault to the first `times` requests match picks (all of them if times < 0).
type netRule struct {
	name  string
	match func(*http.Request) bool
	times int
	fault netFault
	hits  int
}

// A netFault answers r in place of the server, with the real server behind it in forward.
type netFault func(p *netProxy, rule string, w http.ResponseWriter, r *http.Request)

func newNetProxy(t *testing.T, upstream string) *netProxy {
	target, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = log.New(io.Discard, "", 0) // aborted answers are the point, not news
	p := &netProxy{upstream: rp, calls: map[string]int{}, left: map[string]int{}}
	hs := httptest.NewServer(p)
	t.Cleanup(hs.Close)
	p.URL = hs.URL
	return p
}

// add installs a rule; rules are tried in the order they were added.
func (p *netProxy) add(name string, match func(*http.Request) bool, times int, fault netFault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, &netRule{name: name, match: match, times: times, fault: fault})
}

// total is how many requests have arrived, of every route.
func (p *netProxy) total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, calls := range p.calls {
		n += calls
	}
	return n
}

// hits is how many requests rule name has taken.
func (p *netProxy) hits(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.rules {
		if r.name == name {
			return r.hits
		}
	}
	return 0
}

// seen is how many requests for route have arrived, faulty or not.
func (p *netProxy) seen(route string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[route]
}

// abandoned is how many connections held open by rule name the client has closed.
func (p *netProxy) abandoned(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.left[name]
}

// routeOf names a request by method and path with ids replaced by {id}, and "SSE" for
// event streams: "GET /v1/executions/{id}/events SSE".
var idSegment = regexp.MustCompile(`/(conv|exec|action|artifact)_[^/:]+`)

func routeOf(r *http.Request) string {
	route := r.Method + " " + idSegment.ReplaceAllString(r.URL.Path, "/{id}")
	if isStream(r) {
		route += " SSE"
	}
	return route
}

func isStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// on matches requests of one route.
func on(route string) func(*http.Request) bool {
	return func(r *http.Request) bool { return routeOf(r) == route }
}

// onStream matches every event stream: the events operation's, and Run's start that asks for one.
func onStream(r *http.Request) bool {
	route := routeOf(r)
	return route == routeStream || route == routeStartStream
}

func (p *netProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.calls[routeOf(r)]++
	var picked *netRule
	for _, rule := range p.rules {
		if (rule.times < 0 || rule.hits < rule.times) && rule.match(r) {
			rule.hits++
			picked = rule
			break
		}
	}
	p.mu.Unlock()
	if picked == nil {
		p.upstream.ServeHTTP(w, r)
		return
	}
	picked.fault(p, picked.name, w, r)
}

// holdOpen keeps the connection open, sending nothing more, until the client leaves.
func (p *netProxy) holdOpen(rule string, r *http.Request) {
	<-r.Context().Done()
	p.mu.Lock()
	p.left[rule]++
	p.mu.Unlock()
}

// silence accepts the request and never answers: not even a header. It reads the body first:
// net/http notices a client that left only once the body is read, and Run's start has one.
func silence(p *netProxy, rule string, _ http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	p.holdOpen(rule, r)
}

// fetch has the real server answer r and returns the answer.
func (p *netProxy) fetch(r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	p.upstream.ServeHTTP(rec, r)
	return rec
}

// writeHead copies the recorded answer's header, with its full Content-Length.
func writeHead(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for name, values := range rec.Header() {
		w.Header()[name] = values
	}
	w.Header().Set("Content-Length", strconv.Itoa(rec.Body.Len()))
	w.WriteHeader(rec.Code)
}

// cutBody forwards the request, which the server applies, and sends the header and half the
// body of its answer before dropping the connection.
func cutBody(p *netProxy, _ string, w http.ResponseWriter, r *http.Request) {
	rec := p.fetch(r)
	writeHead(w, rec)
	_, _ = w.Write(rec.Body.Bytes()[:rec.Body.Len()/2])
	_ = http.NewResponseController(w).Flush()
	panic(http.ErrAbortHandler) // closes the connection without a word in the log
}

// silenceMidBody sends the header and half the body, then nothing, with the connection open.
func silenceMidBody(p *netProxy, rule string, w http.ResponseWriter, r *http.Request) {
	rec := p.fetch(r)
	writeHead(w, rec)
	_, _ = w.Write(rec.Body.Bytes()[:rec.Body.Len()/2])
	_ = http.NewResponseController(w).Flush()
	p.holdOpen(rule, r)
}

// gateway answers like a proxy whose upstream failed: an HTML page with status.
func gateway(status int) netFault {
	return func(_ *netProxy, _ string, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "<html><body><h1>"+http.StatusText(status)+"</h1></body></html>")
	}
}

// slow forwards the server's answer late and in pieces: the header after one pause, then the
// body in `pieces` writes with a pause before each. Every pause alone is short; together they
// last pieces+1 pauses.
func slow(pause time.Duration, pieces int) netFault {
	return func(p *netProxy, _ string, w http.ResponseWriter, r *http.Request) {
		rec := p.fetch(r)
		time.Sleep(pause)
		writeHead(w, rec)
		_ = http.NewResponseController(w).Flush()
		body := rec.Body.Bytes()
		size := (len(body) + pieces - 1) / pieces
		for len(body) > 0 {
			time.Sleep(pause)
			n := min(size, len(body))
			_, _ = w.Write(body[:n])
			_ = http.NewResponseController(w).Flush()
			body = body[n:]
		}
	}
}

// sseFrame is one block of an event stream: an event (id and type) or a comment.
type sseFrame struct {
	raw     string // the block with its blank line
	id      string
	event   string
	comment bool
}

func parseFrame(raw string) sseFrame {
	f := sseFrame{raw: raw}
	for line := range strings.SplitSeq(strings.TrimRight(raw, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, ":"):
			f.comment = true
		case strings.HasPrefix(line, "id:"):
			f.id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "event:"):
			f.event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		}
	}
	return f
}

// frameEdit decides what the client gets for each frame of one stream: nothing, the frame,
// or more. It is made afresh for each stream, so it may keep state.
type frameEdit func(f sseFrame) []string

// editFrames forwards an event stream frame by frame through the edit newEdit makes; with
// hold, it keeps the connection open after the server's stream ended, until the client leaves.
func editFrames(newEdit func() frameEdit, hold bool) netFault {
	return func(p *netProxy, rule string, w http.ResponseWriter, r *http.Request) {
		if hold {
			// Deferred: when the client leaves, the ReverseProxy panics with ErrAbortHandler.
			defer p.holdOpen(rule, r)
		}
		p.upstream.ServeHTTP(&frameWriter{ResponseWriter: w, edit: newEdit()}, r)
	}
}

// frameWriter splits what the server writes into frames and writes what the edit makes of
// each, flushing after every frame.
type frameWriter struct {
	http.ResponseWriter
	edit frameEdit
	buf  bytes.Buffer
}

func (w *frameWriter) Write(b []byte) (int, error) {
	if !strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		return w.ResponseWriter.Write(b)
	}
	w.buf.Write(b)
	for {
		i := bytes.Index(w.buf.Bytes(), []byte("\n\n"))
		if i < 0 {
			return len(b), nil
		}
		frame := parseFrame(string(w.buf.Next(i + 2)))
		for _, out := range w.edit(frame) {
			if _, err := io.WriteString(w.ResponseWriter, out); err != nil {
				return 0, err
			}
		}
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

func (w *frameWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *frameWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// silentAfter passes n event frames (with the heartbeats between them), then nothing at all:
// neither events nor heartbeats.
func silentAfter(n int) func() frameEdit {
	return func() frameEdit {
		events := 0
		return func(f sseFrame) []string {
			if events >= n {
				return nil
			}
			if !f.comment {
				events++
			}
			return []string{f.raw}
		}
	}
}

// dropEvents loses every event frame of type typ; heartbeats go on.
func dropEvents(typ string) func() frameEdit {
	return func() frameEdit {
		return func(f sseFrame) []string {
			if f.event == typ {
				return nil
			}
			return []string{f.raw}
		}
	}
}

// repeatEvents sends every event frame twice and then the one before it again: duplicates
// and an older event inside one stream.
func repeatEvents() func() frameEdit {
	return func() frameEdit {
		previous := ""
		return func(f sseFrame) []string {
			if f.comment {
				return []string{f.raw}
			}
			out := []string{f.raw, f.raw}
			if previous != "" {
				out = append(out, previous)
			}
			previous = f.raw
			return out
		}
	}
}

// dropFirst loses the first event frame of type typ.
func dropFirst(typ string) func() frameEdit {
	return func() frameEdit {
		dropped := false
		return func(f sseFrame) []string {
			if f.event == typ && !dropped {
				dropped = true
				return nil
			}
			return []string{f.raw}
		}
	}
}

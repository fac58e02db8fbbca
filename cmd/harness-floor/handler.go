package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The wire work of one execution, byte for byte what harness-edge sends for the load tool's mock
// execution ("hello runtime", 7 events) — see proxy/start_stream.go and proxy/events_sse.go —
// in the two ways clients run one: started and streamed in one request, or started (202) and
// then streamed by a second request.

// startBody is the part of StartExecutionRequest the floor reads.
type startBody struct {
	ConversationID string         `json:"conversationId"`
	ProviderID     string         `json:"providerId"`
	Input          string         `json:"input"`
	Config         map[string]any `json:"config"`
	IdempotencyKey *string        `json:"idempotencyKey"`
}

const maxBody = 1 << 20

type handler struct {
	store  *floorStore
	seq    atomic.Uint64  // time-ordered ids: keys append at the end of the B+tree, as ours do
	recent recentFrames   // the frames of recent executions, for their event streams
	live   liveExecutions // the executions streaming now (live mode, live.go)
}

func newHandler(store *floorStore) http.Handler {
	h := &handler{store: store}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ok"}`)
	})
	mux.HandleFunc("POST /v1/conversations", h.createConversation)
	mux.HandleFunc("POST /v1/executions", h.start)
	mux.HandleFunc("GET /v1/executions/{id}/events", h.streamEvents)
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) { serveMetrics(w, store) })
	return mux
}

// start is one execution, in either of the two ways clients run one: started and streamed in
// one request (Accept: text/event-stream, what the Go SDK's Run sends: startAndStream), or
// started with a 202 and streamed by a second request (the portable way: startThen202, then
// streamEvents).
func (h *handler) start(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.Header.Get("Accept"), "text/event-stream") {
		h.startAndStream(w, r)
		return
	}
	h.startThen202(w, r)
}

// newID is a 32-hex-digit id that grows with time, like harness-edge's execution ids.
func (h *handler) newID(prefix string) string {
	var raw [16]byte
	now := uint64(time.Now().UnixNano())
	n := h.seq.Add(1)
	for i := range 8 {
		raw[i] = byte(now >> (56 - 8*i))
		raw[8+i] = byte(n >> (56 - 8*i))
	}
	return prefix + hex.EncodeToString(raw[:])
}

func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// createConversation answers 201 without storing anything: a client creates one conversation
// and then runs its executions in it, so this is not part of the per-execution floor.
func (h *handler) createConversation(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxBody))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{"createdAt":"`+timestamp(time.Now())+`","id":"`+h.newID("conv_")+`","metadata":{}}`)
}

// execute is the part both ways share: decode the start body, one durable Put of the
// execution's record and events. ok is false when the answer was written (an error).
func (h *handler) execute(w http.ResponseWriter, r *http.Request) (req startBody, id, at string, snapshot, frames []byte, ok bool) {
	if req, ok = decodeStart(w, r); !ok {
		return req, "", "", nil, nil, false
	}
	return h.executeDecoded(w, req)
}

// decodeStart reads and decodes the start body; ok is false when the answer was written.
func decodeStart(w http.ResponseWriter, r *http.Request) (req startBody, ok bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return req, false
	}
	if err := json.Unmarshal(body, &req); err != nil || req.ConversationID == "" || req.ProviderID == "" {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"code":"VALIDATION_ERROR","message":"Invalid execution request"}}`)
		return req, false
	}
	return req, true
}

// executeDecoded is execute after the decode.
func (h *handler) executeDecoded(w http.ResponseWriter, req startBody) (_ startBody, id, at string, snapshot, frames []byte, ok bool) {
	id = h.newID("exec_")
	at = timestamp(time.Now())
	snapshot = appendSnapshot(nil, id, at, "Echo: "+req.Input, req)
	frames = appendFrames(nil, id, at, req)

	// The durable state of the execution: its record and its events, one Put, one group commit.
	// The snapshot is one line of JSON, so a newline separates it from the frames.
	value := make([]byte, 0, len(snapshot)+1+len(frames))
	value = append(append(append(value, snapshot...), '\n'), frames...)
	if err := h.store.put([]byte(id), value); err != nil {
		http.Error(w, "commit: "+err.Error(), http.StatusServiceUnavailable)
		return req, "", "", nil, nil, false
	}
	return req, id, at, snapshot, frames, true
}

// startAndStream is one execution in one request: the durable Put, then 7 SSE frames in one
// write, the final snapshot in the trailer.
func (h *handler) startAndStream(w http.ResponseWriter, r *http.Request) {
	_, id, _, snapshot, frames, ok := h.execute(w, r)
	if !ok {
		return
	}

	hdr := w.Header()
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Harness-Execution-Id", id)
	hdr.Set("Harness-Heartbeat-Ms", "15000")
	hdr.Set("Location", "/v1/executions/"+id)
	hdr.Set("Trailer", "Harness-Execution")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(frames)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	hdr.Set(http.TrailerPrefix+"Harness-Execution", string(snapshot))
}

// startThen202 is the first request of the portable way: the durable Put, then the 202 with
// the execution as a start answers it (queued). Its frames stay in memory for the stream that
// follows.
func (h *handler) startThen202(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeStart(w, r)
	if !ok {
		return
	}
	if delay, live := liveDelay(req); live {
		h.startLive(w, req, delay)
		return
	}
	req, id, at, _, frames, ok := h.executeDecoded(w, req)
	if !ok {
		return
	}
	h.recent.add(id, frames)
	body := appendQueued(nil, id, at, req)
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write(body)
}

// streamEvents is the second request of the portable way: the execution's 7 frames from memory
// (or, past the recent ones, from the store), with the headers in one write and nothing after
// (a Content-Length, not a chunked body). Only the whole stream of a finished execution, which
// is all the load tool asks for.
func (h *handler) streamEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if x, ok := h.live.get(id); ok {
		streamLive(w, x)
		return
	}
	frames, ok := h.recent.get(id)
	if !ok {
		value, err := h.store.get([]byte(id))
		if err != nil || value == nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"code":"NOT_FOUND","message":"Execution not found"}`)
			return
		}
		_, frames, _ = bytes.Cut(value, []byte("\n"))
	}
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Harness-Heartbeat-Ms", "15000")
	hdr.Set("X-Accel-Buffering", "no")
	hdr.Set("Content-Length", strconv.Itoa(len(frames)))
	_, _ = w.Write(frames)
}

// appendQueued writes the execution as the 202 of a start answers it.
func appendQueued(b []byte, id, at string, req startBody) []byte {
	config, _ := json.Marshal(req.Config)
	if req.Config == nil {
		config = []byte("{}")
	}
	b = append(b, `{"conversationId":`...)
	b = strconv.AppendQuote(b, req.ConversationID)
	b = append(b, `,"createdAt":"`...)
	b = append(b, at...)
	b = append(b, `","effectiveConfig":`...)
	b = append(b, config...)
	b = append(b, `,"id":"`...)
	b = append(b, id...)
	b = append(b, `","input":`...)
	b = strconv.AppendQuote(b, req.Input)
	b = append(b, `,"providerId":`...)
	b = strconv.AppendQuote(b, req.ProviderID)
	b = append(b, `,"requiredCapabilities":[],"state":"queued","updatedAt":"`...)
	b = append(b, at...)
	return append(b, `"}`...)
}

// appendSnapshot writes the final snapshot, the body GET /v1/executions/{id} answers.
func appendSnapshot(b []byte, id, at, output string, req startBody) []byte {
	config, _ := json.Marshal(req.Config)
	if req.Config == nil {
		config = []byte("{}")
	}
	b = append(b, `{"conversationId":`...)
	b = strconv.AppendQuote(b, req.ConversationID)
	b = append(b, `,"createdAt":"`...)
	b = append(b, at...)
	b = append(b, `","effectiveConfig":`...)
	b = append(b, config...)
	b = append(b, `,"endedAt":"`...)
	b = append(b, at...)
	b = append(b, `","finalOutput":`...)
	b = strconv.AppendQuote(b, output)
	b = append(b, `,"id":"`...)
	b = append(b, id...)
	b = append(b, `","input":`...)
	b = strconv.AppendQuote(b, req.Input)
	b = append(b, `,"providerId":`...)
	b = strconv.AppendQuote(b, req.ProviderID)
	b = append(b, `,"requiredCapabilities":[],"startedAt":"`...)
	b = append(b, at...)
	b = append(b, `","state":"succeeded","updatedAt":"`...)
	b = append(b, at...)
	return append(b, `"}`...)
}

// appendFrames writes the mock execution's events (7 for "hello runtime") as SSE frames, the first with the retry
// field, as harness-edge frames them.
func appendFrames(b []byte, id, at string, req startBody) []byte {
	provider := `{"providerId":` + strconv.Quote(req.ProviderID) + `}`
	type event struct{ typ, data string }
	events := make([]event, 0, 8)
	events = append(events, event{"run.queued", provider}, event{"run.started", provider},
		event{"output.text.delta", `{"text":"Echo: "}`})
	for word := range strings.SplitAfterSeq(req.Input, " ") { // the mock's deltas: one per word
		events = append(events, event{"output.text.delta", `{"text":` + strconv.Quote(word) + `}`})
	}
	events = append(events, event{"output.text.done", `{"text":` + strconv.Quote("Echo: "+req.Input) + `}`},
		event{"run.completed", `{"finalOutput":` + strconv.Quote("Echo: "+req.Input) + `}`})
	for i, ev := range events {
		b = appendFrame(b, id, i+1, ev.typ, ev.data, at)
	}
	return b
}

// appendFrame writes one event as harness-edge frames it (the first with the retry field).
func appendFrame(b []byte, id string, sequence int, typ, data, at string) []byte {
	seq := strconv.Itoa(sequence)
	b = append(b, "id: "...)
	b = append(b, seq...)
	b = append(b, "\nevent: "...)
	b = append(b, typ...)
	if sequence == 1 {
		b = append(b, "\nretry: 250"...)
	}
	b = append(b, "\ndata: {\"data\":"...)
	b = append(b, data...)
	b = append(b, `,"executionId":"`...)
	b = append(b, id...)
	b = append(b, `","id":"`...)
	b = append(b, id...)
	b = append(b, ':')
	b = append(b, seq...)
	b = append(b, `","sequence":`...)
	b = append(b, seq...)
	b = append(b, `,"time":"`...)
	b = append(b, at...)
	b = append(b, `","type":"`...)
	b = append(b, typ...)
	return append(b, "\"}\n\n"...)
}

package main

import (
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
// execution ("hello runtime", 7 events) — see proxy/start_stream.go and proxy/events_sse.go.

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
	store *floorStore
	seq   atomic.Uint64 // time-ordered ids: keys append at the end of the B+tree, as ours do
}

func newHandler(store *floorStore) http.Handler {
	h := &handler{store: store}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ok"}`)
	})
	mux.HandleFunc("POST /v1/conversations", h.createConversation)
	mux.HandleFunc("POST /v1/executions", h.startAndStream)
	mux.HandleFunc("GET /metrics", serveAllocationMetrics)
	return mux
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

// startAndStream is one execution: decode the start body, one durable Put, 7 SSE frames in one
// write, the final snapshot in the trailer.
func (h *handler) startAndStream(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	var req startBody
	if err := json.Unmarshal(body, &req); err != nil || req.ConversationID == "" || req.ProviderID == "" {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"code":"VALIDATION_ERROR","message":"Invalid execution request"}}`)
		return
	}
	id := h.newID("exec_")
	at := timestamp(time.Now())
	output := "Echo: " + req.Input
	snapshot := appendSnapshot(nil, id, at, output, req)
	frames := appendFrames(nil, id, at, req)

	// The durable state of the execution: its record and its events, one Put, one group commit.
	value := make([]byte, 0, len(snapshot)+len(frames))
	value = append(append(value, snapshot...), frames...)
	if err := h.store.put([]byte(id), value); err != nil {
		http.Error(w, "commit: "+err.Error(), http.StatusServiceUnavailable)
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
		seq := strconv.Itoa(i + 1)
		b = append(b, "id: "...)
		b = append(b, seq...)
		b = append(b, "\nevent: "...)
		b = append(b, ev.typ...)
		if i == 0 {
			b = append(b, "\nretry: 250"...)
		}
		b = append(b, "\ndata: {\"data\":"...)
		b = append(b, ev.data...)
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
		b = append(b, ev.typ...)
		b = append(b, "\"}\n\n"...)
	}
	return b
}

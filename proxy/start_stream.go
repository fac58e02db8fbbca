package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Start and stream in one request: a harness-edge extension of startExecution.
//
// A client that sends `Accept: text/event-stream` (and does not prefer JSON) with
// POST /v1/executions gets, instead of the 202 snapshot, a 200 SSE stream of the execution from
// sequence 1 (run.queued first), exactly what GET /v1/executions/{id}/events would stream with
// no cursor. Everything before the answer is today's start: the same body checks, the same
// idempotency, the same Problem errors as JSON. A client that never asks (the reference's
// clients, browsers sending */*) never sees it, so no announcement is needed; a client that asks
// a server without the extension (the reference) gets the usual 202 and streams as before.
// It saves a round trip per execution and the events request's setup.

// Headers of the streamed start. The id is also the last segment of Location; the header spares
// the client parsing a URL.
const executionIDHeader = "Harness-Execution-Id"

// finalSnapshotTrailer is the HTTP trailer that ends a streamed start whose execution ended: the
// execution's final snapshot, the body GET /v1/executions/{id} would answer, as one line of
// JSON. It follows the stream's last chunk, so the event stream itself is byte for byte the
// events operation's. A client that reads the stream to its end (the Go SDK's Run) has the
// outcome without a second request; one that ignores trailers, or reads through a proxy that
// drops them, asks for the snapshot as before.
const finalSnapshotTrailer = "Harness-Execution"

// maxSnapshotTrailerBytes bounds the trailer: a snapshot larger than this (a long finalOutput)
// is not sent in it, since proxies and clients bound header sizes; the client then asks.
const maxSnapshotTrailerBytes = 16 << 10

// streamStartedExecution answers a start that asked for a stream: the execution's events from
// the first, through the same writer as the events route. exec is the snapshot the start
// returned (new or replayed): a replay streams the original execution from its beginning.
func (h *Handler) streamStartedExecution(w http.ResponseWriter, r *http.Request, exec api.Execution) {
	// The trailer is declared up front, so that clients keep it on the response they were handed.
	setHeaders(w.Header(), executionIDHeader, exec.ID, "Location", "/v1/executions/"+exec.ID, "Trailer", finalSnapshotTrailer)
	h.streamEvents(w, r, exec.ID, 0, false)
	h.trailFinalSnapshot(w, r, exec.ID)
}

// trailFinalSnapshot sets the trailer finalSnapshotTrailer once the stream has ended, if the
// execution has ended too (the stream then ended after its terminal event, or was cut; a client
// uses the trailer only after the terminal event). net/http writes it after the last chunk; a
// client that left makes the read fail and nothing is sent.
func (h *Handler) trailFinalSnapshot(w http.ResponseWriter, r *http.Request, id string) {
	final, err := h.rt.GetExecution(r.Context(), id)
	if err != nil || !final.State.Terminal() {
		return
	}
	body, err := json.Marshal(final) // as writeJSON encodes the snapshot GET answers
	if err != nil || len(body) > maxSnapshotTrailerBytes {
		return
	}
	w.Header().Set(http.TrailerPrefix+finalSnapshotTrailer, string(body))
}

// prefersEventStream reports whether a start should answer with the stream: Accept lists
// text/event-stream with a quality above 0 and at least that of JSON. JSON's quality is that of
// the most specific range matching application/json (application/json, application/*, */*),
// absent = 0. So `text/event-stream, application/json` (the Go SDK) streams, and so does
// `text/event-stream` alone; `application/json, text/event-stream;q=0.5` and a plain `*/*` keep
// the 202 JSON. Media types compare case-insensitively, as in wantsEventStream.
func prefersEventStream(h http.Header) bool {
	stream, json := -1.0, -1.0
	jsonSpecificity := -1
	for _, value := range h.Values("Accept") {
		for value != "" {
			var mediaRange string
			mediaRange, value, _ = strings.Cut(value, ",")
			mediaType, params, _ := strings.Cut(mediaRange, ";")
			mediaType = strings.ToLower(strings.TrimSpace(mediaType))
			q := quality(params)
			switch mediaType {
			case "text/event-stream":
				stream = max(stream, q)
			case "application/json", "application/*", "*/*":
				// The most specific range decides (RFC 9110 §12.5.1), not the highest q.
				specificity := 2 - strings.Count(mediaType, "*")
				if specificity > jsonSpecificity {
					json, jsonSpecificity = q, specificity
				} else if specificity == jsonSpecificity {
					json = max(json, q)
				}
			}
		}
	}
	return stream > 0 && stream >= json
}

// quality is the q parameter of a media range's parameters: 1 when absent, 0 when unreadable
// or out of range (a client that writes q=abc is not asking for anything).
func quality(params string) float64 {
	for params != "" {
		var param string
		param, params, _ = strings.Cut(params, ";")
		name, value, _ := strings.Cut(param, "=")
		if !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || q < 0 || q > 1 {
			return 0
		}
		return q
	}
	return 1
}

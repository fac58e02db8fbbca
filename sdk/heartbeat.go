package sdk

import (
	"net/http"
	"strconv"
	"time"
)

// heartbeatHeader is how a harness-edge server tells its heartbeat interval on an event stream
// (the events operation and the streamed start), in milliseconds: an extension, described in
// the project's docs/protocol.md. With it the client needs no WithHeartbeatInterval to notice
// a dead stream after DeadStreamHeartbeats intervals of silence, whatever the server's setting.
const heartbeatHeader = "Harness-Heartbeat-Ms"

// advertisedHeartbeat is the interval a stream's answer announces, if it announces a usable one.
// A server without the extension (the reference) sends nothing: the client then counts on
// DefaultHeartbeatInterval, as it did before servers told.
func advertisedHeartbeat(h http.Header) (time.Duration, bool) {
	v := h.Get(heartbeatHeader)
	if v == "" {
		return 0, false
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	// Beyond a day is not a heartbeat; the bound also keeps the multiplications below far
	// from overflowing.
	if err != nil || ms <= 0 || ms > int64(24*time.Hour/time.Millisecond) {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

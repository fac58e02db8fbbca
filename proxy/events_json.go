package proxy

import (
	"net/http"
	"strconv"
)

const (
	eventListPrefix = `{"events":[`
	eventListMiddle = `],"nextCursor":`
)

// replayEvents answers an EventList. The events are written as the runtime stored them
// (backend.Event.JSON, encoded once at append time) instead of being decoded and encoded
// again: the replay costs a copy, not a reflection walk per event.
func (h *Handler) replayEvents(w http.ResponseWriter, r *http.Request, executionID string, after int64, limit int) {
	events, next, err := h.rt.ListEvents(r.Context(), executionID, after, limit)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	size := len(eventListPrefix) + len(eventListMiddle) + 20
	for _, ev := range events {
		size += len(ev.JSON) + 1
	}
	buf := make([]byte, 0, size)
	buf = append(buf, eventListPrefix...)
	for i, ev := range events {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, ev.JSON...)
	}
	buf = append(buf, eventListMiddle...)
	buf = strconv.AppendInt(buf, next, 10)
	buf = append(buf, '}')
	writeRawJSON(w, http.StatusOK, buf)
}

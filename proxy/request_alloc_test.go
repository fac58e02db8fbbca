package proxy

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// What the events operation reads of every request before it opens the stream — the cursor
// (after, Last-Event-ID) and whether it is a reconnect — allocates nothing: a portable client
// sends this request once per execution. (Header.Values canonicalises a key that is not in
// canonical form, "Last-Event-ID", with an allocation per call.)
func TestEventCursorOfAStreamRequestAllocatesNothing(t *testing.T) {
	first := httptest.NewRequest(http.MethodGet, "/v1/executions/exec_1/events?after=0", nil)
	first.Header.Set("Accept", "text/event-stream")
	reconnect := httptest.NewRequest(http.MethodGet, "/v1/executions/exec_1/events?after=0", nil)
	reconnect.Header.Set("Last-Event-ID", "5")
	for _, c := range []struct {
		name      string
		r         *http.Request
		cursor    int64
		reconnect bool
	}{{"first request", first, 0, false}, {"reconnect", reconnect, 5, true}} {
		cursor, err := eventCursor(c.r)
		if err != nil || cursor != c.cursor || isReconnect(c.r) != c.reconnect {
			t.Fatalf("%s: cursor %d, %v, reconnect %v; want %d, a reconnect %v", c.name, cursor, err, isReconnect(c.r), c.cursor, c.reconnect)
		}
		allocs := testing.AllocsPerRun(100, func() {
			_, _ = eventCursor(c.r)
			_ = isReconnect(c.r)
			_ = wantsEventStream(c.r.Header)
		})
		if allocs != 0 {
			t.Fatalf("%s: reading the cursor allocated %.0f times; want none", c.name, allocs)
		}
	}
}

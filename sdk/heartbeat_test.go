package sdk

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// roundTripFunc answers a request in place of the network.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The watchdog measures an event stream's silence against the heartbeat its server announces,
// unless WithHeartbeatInterval overrides it; an answer that announces nothing usable (the
// reference server) keeps the default, three times DefaultHeartbeatInterval.
func TestWatchdogFollowsTheAnnouncedHeartbeat(t *testing.T) {
	const streamTimeout, answerTimeout = DeadStreamHeartbeats * DefaultHeartbeatInterval, DefaultStallTimeout
	for _, tc := range []struct {
		name, accept, announced string
		follow                  bool
		want                    time.Duration
	}{
		{"announced", "text/event-stream", "1000", true, 3 * time.Second},
		{"streamed start", "text/event-stream, application/json", "250", true, 750 * time.Millisecond},
		{"not announced", "text/event-stream", "", true, streamTimeout},
		{"overridden by WithHeartbeatInterval", "text/event-stream", "1000", false, streamTimeout},
		{"not a number", "text/event-stream", "1s", true, streamTimeout},
		{"zero", "text/event-stream", "0", true, streamTimeout},
		{"negative", "text/event-stream", "-1000", true, streamTimeout},
		{"beyond a day", "text/event-stream", "86400001", true, streamTimeout},
		{"a call's answer", "application/json", "1000", true, answerTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := roundTripFunc(func(*http.Request) (*http.Response, error) {
				h := http.Header{}
				if tc.announced != "" {
					h.Set("Harness-Heartbeat-Ms", tc.announced)
				}
				return &http.Response{StatusCode: http.StatusOK, Header: h, Body: io.NopCloser(strings.NewReader(""))}, nil
			})
			wd := &watchdogTransport{next: next, answerTimeout: answerTimeout, streamTimeout: streamTimeout, followHeartbeat: tc.follow}
			req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/v1/executions/exec_1/events", nil)
			req.Header.Set("Accept", tc.accept)
			resp, err := wd.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if got := resp.Body.(*watchedBody).dog.timeout; got != tc.want {
				t.Fatalf("silence allowed = %v, want %v", got, tc.want)
			}
		})
	}
}

// New follows the server's heartbeat unless WithHeartbeatInterval is given.
func TestNewFollowsTheServersHeartbeatUnlessTold(t *testing.T) {
	for _, tc := range []struct {
		opts   []Option
		follow bool
	}{
		{nil, true},
		{[]Option{WithHeartbeatInterval(time.Second)}, false},
		{[]Option{WithHeartbeatInterval(-1)}, false},
	} {
		c, err := New("http://127.0.0.1:4310", tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if c.followHeartbeat != tc.follow {
			t.Errorf("with %d options: follows the server's heartbeat = %v, want %v", len(tc.opts), c.followHeartbeat, tc.follow)
		}
	}
}

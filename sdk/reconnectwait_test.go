package sdk

import (
	"net/http"
	"testing"
	"time"
)

// The reconnect waits of every stream (Events and the follows): quick after a stream that brought events, backing
// off by the retry policy while attempts bring nothing, the server's Retry-After followed.
func TestReconnectWait(t *testing.T) {
	stream := func(p RetryPolicy) *Client {
		c, err := New("http://127.0.0.1:1", WithRetry(p))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	defaults := stream(DefaultRetryPolicy)
	retryAfter := &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Retry-After": {"2"}}}
	for range 200 { // the waits are random: sample them
		for _, tc := range []struct {
			s        *Client
			failures int
			resp     *http.Response
			min, max time.Duration
		}{
			{defaults, 0, nil, 50 * time.Millisecond, 100 * time.Millisecond}, // a clean cut after progress
			{defaults, 1, nil, 375 * time.Millisecond, 500 * time.Millisecond},
			{defaults, 2, nil, 750 * time.Millisecond, time.Second},
			{defaults, 40, nil, 6 * time.Second, 8 * time.Second}, // capped at MaxWait
			{defaults, 0, retryAfter, 2 * time.Second, 2 * time.Second},
			{stream(RetryPolicy{MinWait: time.Millisecond}), 0, nil, 500 * time.Microsecond, time.Millisecond},
		} {
			if got := tc.s.reconnectWait(tc.failures, tc.resp); got < tc.min || got > tc.max {
				t.Fatalf("reconnectWait(%d, %v) = %v, want %v to %v", tc.failures, tc.resp != nil, got, tc.min, tc.max)
			}
		}
	}
}

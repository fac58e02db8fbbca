package main

import "testing"

// TestSubscribeBase: without -subscribe-url the subscribers use -url; with it, its URL (trailing
// slash trimmed), and only on loopback, like -url.
func TestSubscribeBase(t *testing.T) {
	l := &load{cfg: config{baseURL: "http://127.0.0.1:4311"}}
	defer func(old string) { *subscribeURL = old }(*subscribeURL)
	for _, tc := range []struct{ flag, want string }{
		{"", "http://127.0.0.1:4311"},
		{"http://127.0.0.1:4312/", "http://127.0.0.1:4312"},
	} {
		*subscribeURL = tc.flag
		if got, err := l.subscribeBase(); err != nil || got != tc.want {
			t.Errorf("-subscribe-url %q: %q, %v; want %q", tc.flag, got, err, tc.want)
		}
	}
	*subscribeURL = "http://10.0.0.2:4312"
	if got, err := l.subscribeBase(); err == nil {
		t.Errorf("-subscribe-url %s accepted as %q", *subscribeURL, got)
	}
}

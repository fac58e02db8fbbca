package proxy

import (
	"net/http"
	"testing"
)

func TestWantsEventStream(t *testing.T) {
	for _, tc := range []struct {
		accept []string
		want   bool
	}{
		{nil, false},
		{[]string{"application/json"}, false},
		{[]string{"*/*"}, false},
		{[]string{"text/*"}, false},
		{[]string{"text/event-stream"}, true},
		{[]string{"TEXT/Event-Stream"}, true},
		{[]string{" text/event-stream ; charset=utf-8"}, true},
		{[]string{"application/json, text/event-stream;q=0.5"}, true},
		{[]string{"application/json", "text/event-stream"}, true},
		{[]string{"text/event-stream;q=0"}, false},
		{[]string{"text/event-stream; Q=0.000"}, false},
		{[]string{"text/event-stream;q=0.001"}, true},
		{[]string{"text/event-streamx"}, false},
		{[]string{"xtext/event-stream"}, false},
	} {
		h := http.Header{}
		for _, v := range tc.accept {
			h.Add("Accept", v)
		}
		if got := wantsEventStream(h); got != tc.want {
			t.Errorf("Accept %q: wantsEventStream = %v, want %v", tc.accept, got, tc.want)
		}
	}
}

package proxy

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// writeCountingListener counts the writes the server makes on the connections it accepted: each
// is one write system call on a real socket.
type writeCountingListener struct {
	net.Listener
	writes atomic.Int64
}

func (l *writeCountingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &writeCountingConn{Conn: c, writes: &l.writes}, nil
}

type writeCountingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *writeCountingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// A client that starts an execution and then streams it (every client of the reference, and
// harnessctl against other servers) almost always finds it finished, or its events all
// committed: that stream leaves in one write, headers and events together, with a Content-Length
// instead of a chunked body whose end would take a write of its own. The events are the same
// bytes as a chunked stream's; a stream still running stays chunked (TestSSELiveDelivery), as
// does the streamed start, whose trailer needs chunks (TestStartStreamEndsWithTheFinalSnapshotTrailer).
func TestStreamOfAFinishedExecutionLeavesInOneWrite(t *testing.T) {
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		t.Fatal(err)
	}
	h := New(rt, Options{})
	srv := httptest.NewUnstartedServer(h)
	counting := &writeCountingListener{Listener: srv.Listener}
	srv.Listener = counting
	srv.Start()
	t.Cleanup(func() {
		h.Shutdown()
		srv.Close()
		_ = rt.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	conv, err := rt.CreateConversation(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	exec, _, err := rt.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "hello runtime"})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range backend.FollowExecution(ctx, rt, exec.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		name, query, lastEventID string
		first, events            int
	}{
		{name: "from the start", first: 1, events: 7},
		{name: "after a cursor", query: "?after=3", first: 4, events: 4},
		{name: "resumed with Last-Event-ID", lastEventID: "5", first: 6, events: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/executions/"+exec.ID+"/events"+tc.query, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Accept", "text/event-stream")
			if tc.lastEventID != "" {
				req.Header.Set("Last-Event-ID", tc.lastEventID)
			}
			before := counting.writes.Load()
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if writes := counting.writes.Load() - before; writes != 1 {
				t.Errorf("the stream took %d writes, want 1 (headers and events together, nothing after)", writes)
			}
			if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("%d %v", res.StatusCode, res.Header)
			}
			if got := res.Header.Get("Content-Length"); got != strconv.Itoa(len(body)) || len(res.TransferEncoding) != 0 {
				t.Errorf("Content-Length %q, Transfer-Encoding %v; body of %d bytes", got, res.TransferEncoding, len(body))
			}
			var seqs []string
			var last string
			for ev, err := range sse.Read(bytes.NewReader(body), nil) {
				if err != nil {
					t.Fatal(err)
				}
				seqs = append(seqs, ev.LastEventID)
				last = ev.Type
			}
			var want []string
			for seq := tc.first; seq < tc.first+tc.events; seq++ {
				want = append(want, strconv.Itoa(seq))
			}
			if strings.Join(seqs, ",") != strings.Join(want, ",") || last != string(api.StandardEventTypeRunCompleted) {
				t.Fatalf("events %v ending with %s, want %v ending with run.completed:\n%s", seqs, last, want, body)
			}
		})
	}
}

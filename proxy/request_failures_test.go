package proxy

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/internal/testutil"
)

// serveStore serves a runtime over a bbolt store in dir, the handler logging to logs.
func serveStore(t *testing.T, dir string, logs *testutil.LockedBuffer) (*testServer, *bolt.Store) {
	t.Helper()
	st, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := backend.Open(backend.Options{Store: st, Providers: []backend.Provider{mock.New()}})
	if err != nil {
		t.Fatal(err)
	}
	h := New(rt, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Shutdown()
		srv.Close()
		_ = rt.Close()
	})
	return &testServer{t: t, rt: rt, handler: h, srv: srv, streams: &countingObserver{}}, st
}

// sendAll sends n requests from 8 clients at once and returns how many answered each status.
func (ts *testServer) sendAll(n int, req func(i int) request) map[int]int {
	var (
		mu       sync.Mutex
		statuses = map[int]int{}
		wg       sync.WaitGroup
		next     = make(chan int)
	)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				res := ts.send(req(i))
				mu.Lock()
				statuses[res.status]++
				mu.Unlock()
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return statuses
}

var repeatsAttr = regexp.MustCompile(`repeats=(\d+)`)

// requireFailuresSummarised checks that the log accounts for exactly failed request failures
// in at most one line and one summary per window since began.
func requireFailuresSummarised(t *testing.T, logs string, failed int, began time.Time) {
	t.Helper()
	lines, accounted := 0, 0
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, `msg="harness: request failed`) {
			continue
		}
		lines++
		if m := repeatsAttr.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			accounted += n
		} else {
			accounted++
		}
	}
	windows := 1 + int(time.Since(began)/requestErrorLogWindow)
	t.Logf("%d request failures: %d log lines", failed, lines)
	if lines > 1+windows || accounted != failed {
		t.Fatalf("%d request failures made %d log lines accounting for %d (want at most %d lines, accounting for all):\n%s",
			failed, lines, accounted, 1+windows, logs)
	}
}

// Issue 24: while the disk is full every refused request logged `harness: request failed`
// (2,511 lines in 45 s). Now a burst of failures with the same cause is one line, then a
// summary with a count; here the store's write transactions fail as a full disk fails them.
func TestRequestFailuresAreSummarised(t *testing.T) {
	var logs testutil.LockedBuffer
	ts, st := serveStore(t, t.TempDir(), &logs)
	conv := ts.createConversation()
	began := time.Now()
	st.SetWriteFault(&os.PathError{Op: "write", Path: "harness.db", Err: syscall.ENOSPC})
	const n = 200
	statuses := ts.sendAll(n, func(i int) request {
		body := fmt.Sprintf(`{"conversationId":%q,"providerId":"mock","input":"refused %d"}`, conv, i)
		if i%2 == 0 {
			return request{method: http.MethodPost, path: "/v1/conversations"}
		}
		return request{method: http.MethodPost, path: "/v1/executions", body: &body}
	})
	if statuses[http.StatusInternalServerError] != n {
		t.Fatalf("statuses %v, want %d × 500 while the store refuses writes", statuses, n)
	}
	ts.handler.Shutdown() // reports the repeats counted so far
	requireFailuresSummarised(t, logs.String(), n, began)

	st.SetWriteFault(nil) // and the handler serves again

	requireStatus(t, ts.send(request{method: http.MethodPost, path: "/v1/conversations"}), http.StatusCreated)
}

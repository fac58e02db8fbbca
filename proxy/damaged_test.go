package proxy

import (
	"encoding/binary"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/internal/testutil"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// serveDir serves a runtime over the store in dir, logging to logs (runtime and handler) and
// telling obs of damaged records.
func serveDir(t *testing.T, dir string, logs *testutil.LockedBuffer, obs backend.Observer) *testServer {
	t.Helper()
	log := slog.New(slog.NewTextHandler(logs, nil))
	rt, err := local.Open(dir, backend.Options{Providers: []backend.Provider{mock.New()}, Logger: log, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	streams := &countingObserver{}
	h := New(rt, Options{Logger: log, Observer: streams})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Shutdown()
		h.WaitDetached(testTimeout)
		srv.Close()
		_ = rt.Close()
	})
	return &testServer{t: t, rt: rt, handler: h, srv: srv, streams: streams}
}

// damageEvent changes the first byte of a stored event in the bbolt file, as a damaged disk or
// a stray write could (bbolt keeps no checksum of values).
func damageEvent(t *testing.T, dir, executionID string, seq uint64) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, local.FileName), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		key := binary.BigEndian.AppendUint64([]byte(executionID), seq)
		b := tx.Bucket([]byte("events"))
		v := append([]byte(nil), b.Get(key)...)
		if len(v) == 0 {
			t.Fatalf("no event %s:%d", executionID, seq)
		}
		v[0] = 'X'
		return b.Put(key, v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// damageCounter is a metrics observer that counts reads of damaged records.
type damageCounter struct {
	events, executions atomic.Int64
}

func (*damageCounter) ExecutionStarted(string)                      {}
func (*damageCounter) ExecutionFinished(string, api.ExecutionState) {}
func (*damageCounter) EventsAppended(int)                           {}
func (*damageCounter) StoreCommit(time.Duration)                    {}
func (c *damageCounter) StoredRecordUndecodable(kind backend.DamagedRecord) {
	if kind == backend.DamagedEvent {
		c.events.Add(1)
	} else {
		c.executions.Add(1)
	}
}

// Issue 24: a stored event whose first byte was changed on disk was served raw, as invalid
// JSON, by the replay and the stream, with no log line. Now each read of it answers 500
// INTERNAL_ERROR as a Problem (a stream before it opens), the log names the execution once
// however often it is asked for, and the metric counts every read. A stream already open when
// it meets a damaged event ends without its terminal event; resuming from its cursor gets the
// Problem.
func TestDamagedEventAnswersInternalError(t *testing.T) {
	dir := t.TempDir()
	var setupLogs testutil.LockedBuffer
	ts := serveDir(t, dir, &setupLogs, nil)
	short := ts.start("hello runtime", "")
	long := ts.start(strings.TrimSpace(strings.Repeat("word ", 300)), "")
	ts.waitTerminal(short.ID)
	ts.waitTerminal(long.ID)
	healthy := ts.start("still served", "")
	ts.waitTerminal(healthy.ID)
	longEvents := ts.eventList(long.ID, "").Events
	if len(longEvents) <= streamBatch+10 {
		t.Fatalf("the long execution has %d events; the test needs more than one stream batch", len(longEvents))
	}
	ts.handler.Shutdown()
	ts.srv.Close()
	if err := ts.rt.Close(); err != nil {
		t.Fatal(err)
	}

	damageEvent(t, dir, short.ID, 1)
	damagedSeq := uint64(streamBatch + 5) // in the stream's second batch
	damageEvent(t, dir, long.ID, damagedSeq)

	var logs testutil.LockedBuffer
	damage := &damageCounter{}
	ts = serveDir(t, dir, &logs, damage)
	const internal = `{"code":"INTERNAL_ERROR","message":"Unexpected server error"}`
	reads := 0
	for range 3 {
		requireStatusBody(t, ts.get("/v1/executions/"+short.ID+"/events"), http.StatusInternalServerError, internal)
		requireStatusBody(t, ts.get("/v1/executions/"+long.ID+"/events?after=10"), http.StatusInternalServerError, internal)
		res := ts.send(request{method: http.MethodGet, path: "/v1/executions/" + short.ID + "/events", header: map[string]string{"Accept": "text/event-stream"}})
		requireStatusBody(t, res, http.StatusInternalServerError, internal)
		if ct := res.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || res.header.Get("Cache-Control") != "" {
			t.Fatalf("the stream's Problem has the stream's headers: %v", res.header)
		}
		reads += 3
	}
	// Everything else is served: the execution records, the events before the damaged one,
	// another execution.
	if ts.execution(short.ID).State != api.ExecutionStateSucceeded {
		t.Fatal("the record of the execution with a damaged event is not served")
	}
	if got := ts.eventList(long.ID, "?limit=10").Events; len(got) != 10 {
		t.Fatalf("events before the damaged one: %d, want 10", len(got))
	}
	requireSameAsReplay(t, ts, healthy.ID, collect(ts.openStream(healthy.ID, "", nil)))

	// A stream that is open when it meets the damaged event ends after what it could send,
	// without a terminal event; resuming from its last id answers the Problem.
	s := ts.openStream(long.ID, "", nil)
	got := collect(s)
	reads++
	if len(got) != streamBatch || got[len(got)-1].Sequence != streamBatch {
		t.Fatalf("the open stream sent %d events, want the first batch of %d", len(got), streamBatch)
	}
	resumed := ts.send(request{method: http.MethodGet, path: "/v1/executions/" + long.ID + "/events",
		header: map[string]string{"Accept": "text/event-stream", "Last-Event-ID": "256"}})
	requireStatusBody(t, resumed, http.StatusInternalServerError, internal)
	reads++

	out := logs.String()
	for _, id := range []string{short.ID, long.ID} {
		if n := strings.Count(out, "stored event cannot be decoded"+`; reads of this execution's events answer INTERNAL_ERROR (see docs/operations.md)" execution=`+id); n != 1 {
			t.Fatalf("%d log lines name the damaged event of %s, want 1:\n%s", n, id, out)
		}
	}
	if strings.Count(out, "level=ERROR") != 2 {
		t.Fatalf("want exactly the two lines naming the damaged executions, not one per request:\n%s", out)
	}
	if n := damage.events.Load(); n != int64(reads) {
		t.Fatalf("the metric counted %d reads of damaged events, want %d", n, reads)
	}
}

// collect reads a stream to its end.
func collect(s *sseClient) []api.RuntimeEvent {
	defer s.close()
	var events []api.RuntimeEvent
	for {
		ev, ok := s.next()
		if !ok {
			return events
		}
		events = append(events, ev)
	}
}

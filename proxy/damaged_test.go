package proxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	bolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/cluster"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/internal/pgtest"
	"github.com/harness-edge/harness-edge/internal/testutil"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// serveRuntime serves rt, logging to logs; the server is closed with the test.
func serveRuntime(t *testing.T, rt *backend.Runtime, logs *testutil.LockedBuffer) *testServer {
	t.Helper()
	streams := &countingObserver{}
	h := New(rt, Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), Observer: streams})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Shutdown()
		h.WaitDetached(testTimeout)
		srv.Close()
		_ = rt.Close()
	})
	return &testServer{t: t, rt: rt, handler: h, srv: srv, streams: streams}
}

// stop shuts the server and its runtime down (its store closed), as stopping the server does.
func (ts *testServer) stop() {
	ts.t.Helper()
	ts.handler.Shutdown()
	ts.srv.Close()
	if err := ts.rt.Close(); err != nil {
		ts.t.Fatal(err)
	}
}

// serveDir serves a runtime over the bbolt store in dir, logging to logs (runtime and handler)
// and telling obs of damaged records.
func serveDir(t *testing.T, dir string, logs *testutil.LockedBuffer, obs backend.Observer) *testServer {
	t.Helper()
	log := slog.New(slog.NewTextHandler(logs, nil))
	rt, err := local.Open(dir, backend.Options{Providers: []backend.Provider{mock.New()}, Logger: log, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	return serveRuntime(t, rt, logs)
}

// servePostgres serves a runtime over the PostgreSQL database dsn as one node, logging to logs
// and telling obs of damaged records.
func servePostgres(t *testing.T, dsn string, logs *testutil.LockedBuffer, obs backend.Observer) *testServer {
	t.Helper()
	st, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, Node: "node-a"})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := backend.Open(backend.Options{Store: st, Cluster: cluster.New(st, cluster.Options{}),
		Providers: []backend.Provider{mock.New()}, Logger: slog.New(slog.NewTextHandler(logs, nil)), Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	return serveRuntime(t, rt, logs)
}

// A damage changes the bytes of a stored value, as a damaged disk or a stray write could.
type damage func(t *testing.T, v []byte) []byte

// damageFirstByte changes a value's first byte.
func damageFirstByte(_ *testing.T, v []byte) []byte {
	v = bytes.Clone(v)
	v[0] ^= 'X'
	return v
}

// damageQuoteInTheMiddle changes the first '"' of the second half of the value's JSON into
// 'X' (issue 34's damage: the value still starts with '{' and ends with '}').
func damageQuoteInTheMiddle(t *testing.T, v []byte) []byte {
	i := bytes.IndexByte(v[len(v)/2:], '"')
	if i < 0 {
		t.Fatalf("no quote in the second half of %q", v)
	}
	v = bytes.Clone(v)
	v[len(v)/2+i] = 'X'
	return v
}

// damageBoltEvent damages the value of a stored event in the bbolt file of the stopped server
// in dir (bbolt keeps no checksum of values).
func damageBoltEvent(t *testing.T, dir, executionID string, seq uint64, d damage) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, local.FileName), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		key := binary.BigEndian.AppendUint64([]byte(executionID), seq)
		b := tx.Bucket([]byte("events"))
		v := b.Get(key)
		if len(v) == 0 {
			t.Fatalf("no event %s:%d", executionID, seq)
		}
		return b.Put(key, d(t, v))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// damagePostgresEvent damages the JSON of a stored event in the database dsn (PostgreSQL
// checks nothing in a bytea).
func damagePostgresEvent(t *testing.T, dsn, executionID string, seq uint64, d damage) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var data []byte
	if err := conn.QueryRow(ctx, `SELECT data FROM events WHERE execution_id = $1 AND sequence = $2`, executionID, seq).Scan(&data); err != nil {
		t.Fatalf("event %s:%d: %v", executionID, seq, err)
	}
	if _, err := conn.Exec(ctx, `UPDATE events SET data = $3 WHERE execution_id = $1 AND sequence = $2`, executionID, seq, d(t, data)); err != nil {
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

// storeUnderTest is a store the damaged-event tests run on: a server over it, and how to damage
// one of its events while that server is stopped.
type storeUnderTest struct {
	serve  func(t *testing.T, logs *testutil.LockedBuffer, obs backend.Observer) *testServer
	damage func(t *testing.T, executionID string, seq uint64, d damage)
}

func boltUnderTest(t *testing.T) storeUnderTest {
	dir := t.TempDir()
	return storeUnderTest{
		serve: func(t *testing.T, logs *testutil.LockedBuffer, obs backend.Observer) *testServer {
			return serveDir(t, dir, logs, obs)
		},
		damage: func(t *testing.T, id string, seq uint64, d damage) { damageBoltEvent(t, dir, id, seq, d) },
	}
}

func postgresUnderTest(t *testing.T) storeUnderTest {
	dsn := pgtest.Start(t).NewDatabase(t)
	return storeUnderTest{
		serve: func(t *testing.T, logs *testutil.LockedBuffer, obs backend.Observer) *testServer {
			return servePostgres(t, dsn, logs, obs)
		},
		damage: func(t *testing.T, id string, seq uint64, d damage) { damagePostgresEvent(t, dsn, id, seq, d) },
	}
}

// Issue 24: a stored event whose first byte was changed on disk was served raw, as invalid
// JSON, by the replay and the stream, with no log line. Issue 34: so was one with a byte
// changed in its middle (`"` → `X`, the value still `{…}`), on both stores: the reads checked
// only the value's ends. Now each read of it answers 500 INTERNAL_ERROR as a Problem (a stream
// before it opens), the log names the execution once however often it is asked for, and the
// metric counts every read; every other execution is served. A stream already open when it
// meets a damaged event ends without its terminal event; resuming from its cursor gets the
// Problem.
func TestDamagedEventAnswersInternalError(t *testing.T) {
	for _, c := range []struct {
		name   string
		store  func(t *testing.T) storeUnderTest
		damage damage
	}{
		{"bolt/first byte", boltUnderTest, damageFirstByte},
		{"bolt/a quote in the middle", boltUnderTest, damageQuoteInTheMiddle},
		{"postgres/a quote in the middle", postgresUnderTest, damageQuoteInTheMiddle},
	} {
		t.Run(c.name, func(t *testing.T) { testDamagedEvent(t, c.store(t), c.damage) })
	}
}

func testDamagedEvent(t *testing.T, st storeUnderTest, d damage) {
	var setupLogs testutil.LockedBuffer
	ts := st.serve(t, &setupLogs, nil)
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
	ts.stop()

	st.damage(t, short.ID, 1, d)
	damagedSeq := uint64(streamBatch + 5) // in the stream's second batch
	st.damage(t, long.ID, damagedSeq, d)

	var logs testutil.LockedBuffer
	damage := &damageCounter{}
	ts = st.serve(t, &logs, damage)
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

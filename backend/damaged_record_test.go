package backend_test

import (
	"encoding/binary"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/internal/testutil"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// putRaw writes records straight into the store's bbolt file, bypassing every check of the
// runtime and of the HTTP layer, as a bug, an older version or a damaged disk could.
func putRaw(t *testing.T, dir, bucket string, records map[string][]byte) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, local.FileName), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		for k, v := range records {
			if err := tx.Bucket([]byte(bucket)).Put([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Issue 12, item 1: a stored record no decoder can read (nested 9,998 levels deep, the depth
// the HTTP layer used to accept, or plain garbage) made Open fail for good ("recover unfinished
// executions: … exceeded max depth"), so the server refused to start on its data directory.
// Now Open succeeds, logs the ids, recovers the other executions, and only the damaged ones
// answer INTERNAL_ERROR.
func TestUndecodableRecordsDoNotStopTheRuntime(t *testing.T) {
	dir := t.TempDir()
	rt := openRuntime(t, dir, optsNone())
	conv := newConversation(t, rt)
	finished := start(t, rt, conv, startOpts{input: "done"})
	finishedEvents, _ := finalOf(t, rt, finished.ID)
	running := start(t, rt, conv, startOpts{input: "slow", config: api.JSONObject{"delayMs": 60000}})
	waitForEvent(t, rt, running.ID, api.StandardEventTypeRunStarted)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}

	deepID := "exec_" + strings.Repeat("d", 32)
	garbageID := "exec_" + strings.Repeat("e", 32)
	deepRecord := `{"execution":{"id":"` + deepID + `","conversationId":"` + conv + `","providerId":"mock","input":"x",` +
		`"state":"running","requiredCapabilities":[],"createdAt":"2026-01-01T00:00:00.000Z","updatedAt":"2026-01-01T00:00:00.000Z",` +
		`"effectiveConfig":{"a":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `}}}`
	putRaw(t, dir, "executions", map[string][]byte{
		deepID:    []byte(deepRecord),
		garbageID: {0xff, 0x00, '{', 'x'},
	})

	var logs testutil.LockedBuffer
	opts := optsNone()
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	rt2, err := local.Open(dir, withMock(opts))
	if err != nil {
		t.Fatalf("Open refused the data directory because of one record: %v", err)
	}
	t.Cleanup(func() { rt2.Close() })

	for _, id := range []string{deepID, garbageID} {
		if !strings.Contains(logs.String(), id) {
			t.Fatalf("no log line names %s:\n%s", id, logs.String())
		}
		_, err := rt2.GetExecution(ctxT(t), id)
		wantCode(t, err, backend.CodeInternal, "")
		_, _, err = rt2.ListEvents(ctxT(t), id, 0, 0)
		wantCode(t, err, backend.CodeInternal, "")
	}

	// Everything else serves, and recovery did its work on the healthy unfinished execution.
	if events, _ := finalOf(t, rt2, finished.ID); jsonString(events) != jsonString(finishedEvents) {
		t.Fatal("finished execution changed")
	}
	wantFailed(t, rt2, running.ID, "Runtime restarted before the execution finished")
	if _, err := rt2.GetConversation(ctxT(t), conv); err != nil {
		t.Fatal(err)
	}
	fresh := start(t, rt2, conv, startOpts{input: "new"})
	finalOf(t, rt2, fresh.ID)

	// Retention goes on with the rest: the healthy executions expire, the damaged ones stay. The
	// fresh execution may still be leaving the live map (its terminal event is published first),
	// and a sweep leaves such an execution to the next one: sweep until all three are gone.
	deleted := 0
	for deadline := time.Now().Add(10 * time.Second); deleted < 3 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		n, err := backend.SweepExpired(rt2, time.Now().Add(365*24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		deleted += n
	}
	if deleted != 3 {
		t.Fatalf("retention sweeps deleted %d, want 3", deleted)
	}
	ids, err := backend.ExecutionIDs(rt2)
	if err != nil || len(ids) != 0 {
		t.Fatalf("decodable executions left after the sweep: %v %v", ids, err)
	}
	if err := rt2.Close(); err != nil {
		t.Fatal(err)
	}
	openRuntime(t, dir, optsNone()) // and it starts again
}

func withMock(opts backend.Options) backend.Options {
	if opts.Providers == nil {
		opts.Providers = []backend.Provider{mock.New()}
	}
	return opts
}

// A running execution whose last stored event was damaged on disk made the next Open fail
// ("recover unfinished executions: last event of …"), so the server refused to start. Now it
// starts: the execution is failed as any unfinished one, the log names the damaged event once,
// and reads of its log answer INTERNAL_ERROR.
func TestDamagedLastEventDoesNotStopTheRuntime(t *testing.T) {
	dir := t.TempDir()
	rt := openRuntime(t, dir, optsNone())
	conv := newConversation(t, rt)
	running := start(t, rt, conv, startOpts{input: "slow", config: api.JSONObject{"delayMs": 60000}})
	started := waitForEvent(t, rt, running.ID, api.StandardEventTypeRunStarted)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	key := binary.BigEndian.AppendUint64([]byte(running.ID), uint64(started.Sequence))
	putRaw(t, dir, "events", map[string][]byte{string(key): []byte(`X"data":{}}`)})

	var logs testutil.LockedBuffer
	metric := &damageCounter{}
	opts := optsNone()
	opts.Logger, opts.Observer = slog.New(slog.NewTextHandler(&logs, nil)), metric
	rt = openRuntime(t, dir, opts)
	exec := getExecution(t, rt, running.ID)
	if exec.State != api.ExecutionStateFailed || exec.Error == nil || exec.Error.Message != "Runtime restarted before the execution finished" {
		t.Fatalf("after the restart: %s %+v", exec.State, exec.Error)
	}
	for range 3 {
		_, _, err := rt.ListEvents(ctxT(t), running.ID, 0, 0)
		wantCode(t, err, backend.CodeInternal, "")
	}
	if n := strings.Count(logs.String(), "stored event cannot be decoded"); n != 1 {
		t.Fatalf("%d log lines name the damaged event, want 1:\n%s", n, logs.String())
	}
	if n := metric.events.Load(); n != 4 {
		t.Fatalf("the metric counted %d reads of the damaged event, want 4 (recovery and three reads)", n)
	}
}

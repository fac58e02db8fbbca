package backend_test

import (
	"testing"

	"github.com/harness-edge/harness-edge/backend"
)

// Opening, reading and closing the stream of a finished execution — the second request of
// every portable client, which almost always finds the execution finished — costs a bounded,
// small number of allocations: the stream (with its subscription, in one allocation), the
// handle of the finished log, the source it follows, and the batch of events read. A count
// above that means something per-stream was added on this path.
func TestAFinishedExecutionsStreamAllocatesLittle(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	conv := newConversation(t, rt)
	exec := start(t, rt, conv, startOpts{})
	want := len(collect(t, rt, exec.ID, 0))
	ctx := ctxT(t)
	read := func() {
		st, err := rt.OpenStream(ctx, backend.StreamRequest{ExecutionID: exec.ID})
		if err != nil {
			t.Fatal(err)
		}
		events, done, err := st.Read(256)
		if err != nil || !done || len(events) != want {
			t.Fatalf("Read = %d events, done %v, %v; want %d, done", len(events), done, err, want)
		}
		st.Close()
	}
	read()
	const most = 4
	if allocs := testing.AllocsPerRun(100, read); allocs > most {
		t.Fatalf("a finished execution's stream allocated %.0f times; want at most %d", allocs, most)
	}
}

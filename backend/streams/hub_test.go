package streams_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/backend/streams"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// A real bbolt store in t.TempDir() and a hub over it.
func newHub(t testing.TB, opts streams.Options) (*bolt.Store, *streams.Hub) {
	t.Helper()
	st, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := streams.New(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(); st.Close() })
	return st, h
}

func execID(n int) string { return fmt.Sprintf("exec_%032x", n) }
func convID(n int) string { return fmt.Sprintf("conv_%032x", n) }

// emit commits events seq from..to of execution n (tenant, conversation) in one batch.
func emit(t *testing.T, st store.Store, n int, tenant string, conv int, from, to int64, typ api.StandardEventType) {
	t.Helper()
	scope := &store.StreamScope{Tenant: tenant, ConversationID: convID(conv), ProviderID: "mock"}
	var b store.Batch
	for seq := from; seq <= to; seq++ {
		id := execID(n)
		raw := fmt.Sprintf(`{"data":{},"executionId":%q,"id":"%s:%d","sequence":%d,"time":"2026-12-01T00:00:00.000Z","type":%q}`, id, id, seq, seq, typ)
		b.Events = append(b.Events, store.StoredEvent{ExecutionID: id, Scope: scope, Event: store.Event{Sequence: seq, Type: typ, JSON: []byte(raw)}})
	}
	if err := st.Commit(&b); err != nil {
		t.Fatal(err)
	}
}

// drain reads sub until it has want entries or the deadline passes, each batch appended to
// what came before (ReadAppend: at most 7 more each time, the earlier ones untouched).
func drain(t *testing.T, sub *streams.Subscription, want int) []store.LogEntry {
	t.Helper()
	var got []store.LogEntry
	deadline := time.After(10 * time.Second)
	for len(got) < want {
		ready := sub.Ready()
		before := len(got)
		var err error
		got, err = sub.ReadAppend(got, 7)
		if err != nil {
			t.Fatalf("Read after %d entries: %v", before, err)
		}
		if len(got)-before > 7 {
			t.Fatalf("a read of at most 7 appended %d", len(got)-before)
		}
		if len(got) > before {
			continue
		}
		select {
		case <-ready:
		case <-deadline:
			t.Fatalf("%d entries after 10 s; want %d", len(got), want)
		}
	}
	return got
}

func keys(entries []store.LogEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = fmt.Sprintf("%s:%d", e.ExecutionID[len(e.ExecutionID)-2:], e.Event.Sequence)
	}
	return out
}

func TestSubscriptionHandsOffFromTheStoreToTheRingWithoutGapOrDuplicate(t *testing.T) {
	for _, ring := range []int{8, 300, 1000} { // evicting at once; growing, then evicting; growing only
		t.Run(fmt.Sprint(ring), func(t *testing.T) { testHandOff(t, ring) })
	}
}

func testHandOff(t *testing.T, ring int) {
	st, h := newHub(t, streams.Options{RingEntries: ring})
	for i := 0; i < 100; i++ { // 300 entries before the subscription
		emit(t, st, 2, "", 2, int64(3*i+1), int64(3*i+3), api.StandardEventTypeOutputTextDelta)
	}
	for i := range 10 {
		emit(t, st, 1, "", 1, int64(3*i+1), int64(3*i+3), api.StandardEventTypeOutputTextDelta) // 30 entries; the ring keeps 8
	}
	sub, err := h.Subscribe(streams.Filter{ConversationID: convID(1)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []store.LogEntry)
	go func() { done <- drain(t, sub, 60) }()
	for i := 10; i < 20; i++ {
		emit(t, st, 1, "", 1, int64(3*i+1), int64(3*i+3), api.StandardEventTypeOutputTextDelta)
	}
	got := <-done
	for i, e := range got {
		if e.Position != int64(300+i+1) || e.Event.Sequence != int64(i+1) {
			t.Fatalf("entry %d is position %d, sequence %d: %v", i, e.Position, e.Event.Sequence, keys(got))
		}
	}
	if sub.Cursor() != 360 {
		t.Errorf("cursor %d; want 360", sub.Cursor())
	}
}

func TestFiltersNarrowAndTenantsNeverCross(t *testing.T) {
	st, h := newHub(t, streams.Options{})
	acmeAll, _ := h.Subscribe(streams.Filter{Tenant: "acme"}, 0)
	acmeLife, _ := h.Subscribe(streams.Filter{Tenant: "acme", LifecycleOnly: true}, 0)
	otherConv, _ := h.Subscribe(streams.Filter{Tenant: "other", ConversationID: convID(2)}, 0)
	wrongTenant, _ := h.Subscribe(streams.Filter{Tenant: "acme", ConversationID: convID(2)}, 0)
	emit(t, st, 1, "acme", 1, 1, 1, api.StandardEventTypeRunQueued)
	emit(t, st, 2, "other", 2, 1, 1, api.StandardEventTypeRunQueued)
	emit(t, st, 1, "acme", 1, 2, 3, api.StandardEventTypeOutputTextDelta)
	emit(t, st, 2, "other", 2, 2, 2, api.StandardEventTypeRunCompleted)
	emit(t, st, 1, "acme", 1, 4, 4, api.StandardEventTypeRunCompleted)
	for _, c := range []struct {
		name string
		sub  *streams.Subscription
		want string
	}{
		{"acme, everything", acmeAll, "[01:1 01:2 01:3 01:4]"},
		{"acme, lifecycle", acmeLife, "[01:1 01:4]"},
		{"other, conversation 2", otherConv, "[02:1 02:2]"},
	} {
		n := len(c.want) / 5
		if got := fmt.Sprint(keys(drain(t, c.sub, n))); got != c.want {
			t.Errorf("%s: %s; want %s", c.name, got, c.want)
		}
	}
	if entries, err := wrongTenant.Read(100); err != nil || len(entries) != 0 {
		t.Errorf("acme asking for other's conversation got %v, %v; want nothing", keys(entries), err)
	}
	// The same from the store (a cursor older than the ring is read there).
	_, h2 := newHubOver(t, st)
	sub, _ := h2.Subscribe(streams.Filter{Tenant: "acme", LifecycleOnly: true}, 0)
	if got := fmt.Sprint(keys(drain(t, sub, 2))); got != "[01:1 01:4]" {
		t.Errorf("acme lifecycle from the store: %s", got)
	}
}

func newHubOver(t *testing.T, st store.StreamLog) (store.StreamLog, *streams.Hub) {
	h, err := streams.New(st, streams.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return st, h
}

func TestExpiredCursorIsSaidNotSkipped(t *testing.T) {
	st, h := newHub(t, streams.Options{RingEntries: 2})
	emit(t, st, 1, "", 1, 1, 5, api.StandardEventTypeOutputTextDelta)
	time.Sleep(10 * time.Millisecond)
	if _, err := st.TrimLog(time.Now()); err != nil {
		t.Fatal(err)
	}
	emit(t, st, 1, "", 1, 6, 6, api.StandardEventTypeRunCompleted)
	var expired *streams.ExpiredError
	if err := h.CheckCursor(2); !errors.As(err, &expired) || expired.Oldest != 6 || !errors.Is(err, store.ErrCursorExpired) {
		t.Fatalf("CheckCursor(2) = %v; want an ExpiredError with oldest 6", err)
	}
	if err := h.CheckCursor(5); err != nil {
		t.Fatalf("CheckCursor(5) = %v; the log is whole after 5", err)
	}
	sub, _ := h.Subscribe(streams.Filter{}, 2)
	if _, err := sub.Read(10); !errors.As(err, &expired) {
		t.Fatalf("Read from 2 = %v; want an ExpiredError", err)
	}
}

func TestEndStreamsEndsOnlyTheOpenOnes(t *testing.T) {
	st, h := newHub(t, streams.Options{})
	before, _ := h.Subscribe(streams.Filter{}, 0)
	ready := before.Ready()
	h.EndStreams()
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting subscription was not woken by EndStreams")
	}
	if _, err := before.Read(10); !errors.Is(err, streams.ErrEnded) {
		t.Fatalf("Read after EndStreams = %v; want ErrEnded", err)
	}
	after, _ := h.Subscribe(streams.Filter{}, 0)
	emit(t, st, 1, "", 1, 1, 1, api.StandardEventTypeRunQueued)
	if got := drain(t, after, 1); len(got) != 1 {
		t.Fatalf("a later subscription got %v", keys(got))
	}
	h.Close()
	if _, err := after.Read(10); !errors.Is(err, streams.ErrClosed) {
		t.Fatalf("Read after Close = %v; want ErrClosed", err)
	}
	if _, err := h.Subscribe(streams.Filter{}, 0); !errors.Is(err, streams.ErrClosed) {
		t.Fatalf("Subscribe after Close = %v; want ErrClosed", err)
	}
}

func TestConcurrentWritersAndSubscribersSeeOneOrder(t *testing.T) {
	st, h := newHub(t, streams.Options{RingEntries: 64})
	const writers, each = 6, 50
	subs := make([]*streams.Subscription, 8)
	for i := range subs {
		f := streams.Filter{}
		if i%2 == 1 {
			f.ConversationID = convID(1 + i%3)
		}
		subs[i], _ = h.Subscribe(f, 0)
	}
	results := make([][]store.LogEntry, len(subs))
	var wg sync.WaitGroup
	for i, sub := range subs {
		want := writers * each
		if i%2 == 1 {
			want = each * 2 // writers w and w+3 share conversation 1 + w%3
		}
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = drain(t, sub, want) }()
	}
	var ww sync.WaitGroup
	for w := range writers {
		ww.Add(1)
		go func() {
			defer ww.Done()
			for seq := int64(1); seq <= each; seq++ {
				emit(t, st, w+1, "", 1+w%3, seq, seq, api.StandardEventTypeOutputTextDelta)
			}
		}()
	}
	ww.Wait()
	wg.Wait()
	all := results[0]
	for i, got := range results {
		last := int64(0)
		seen := map[string]int64{}
		for _, e := range got {
			if e.Position <= last {
				t.Fatalf("subscriber %d: position %d after %d", i, e.Position, last)
			}
			last = e.Position
			if e.Event.Sequence != seen[e.ExecutionID]+1 {
				t.Fatalf("subscriber %d: %s:%d after sequence %d", i, e.ExecutionID, e.Event.Sequence, seen[e.ExecutionID])
			}
			seen[e.ExecutionID] = e.Event.Sequence
		}
		// Every subscriber's entries are the whole log's, filtered: same positions, same events.
		byPos := map[int64]string{}
		for _, e := range all {
			byPos[e.Position] = e.ExecutionID
		}
		for _, e := range got {
			if byPos[e.Position] != e.ExecutionID {
				t.Fatalf("subscriber %d has %s at %d; the log has %s", i, e.ExecutionID, e.Position, byPos[e.Position])
			}
		}
	}
}

// A node that can no longer vouch for its lease ends its open streams and refuses new ones
// until it vouches again (Options.Lapsed, the cluster's signal).
func TestLeaseLapseEndsStreamsUntilTheNodeVouchesAgain(t *testing.T) {
	var mu sync.Mutex
	lapse := make(chan struct{})
	current := func() <-chan struct{} { mu.Lock(); defer mu.Unlock(); return lapse }
	st, h := newHub(t, streams.Options{Lapsed: current})
	open, err := h.Subscribe(streams.Filter{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	ready := open.Ready()
	close(lapse) // the node lapses
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting stream was not woken by the lapse")
	}
	if _, err := open.Read(10); !errors.Is(err, streams.ErrEnded) {
		t.Fatalf("Read after the lapse = %v; want ErrEnded", err)
	}
	if _, err := h.Subscribe(streams.Filter{}, 0); !errors.Is(err, streams.ErrEnded) {
		t.Fatalf("Subscribe while lapsed = %v; want ErrEnded", err)
	}
	mu.Lock()
	lapse = make(chan struct{}) // it vouches again
	mu.Unlock()
	again, err := h.Subscribe(streams.Filter{}, 0)
	if err != nil {
		t.Fatalf("Subscribe after vouching again: %v", err)
	}
	emit(t, st, 1, "", 1, 1, 1, api.StandardEventTypeRunQueued)
	if got := drain(t, again, 1); len(got) != 1 {
		t.Fatalf("got %v", keys(got))
	}
}

package backend

import (
	"encoding/json"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// The allocation-light encoders must write exactly what encoding/json writes, byte for byte:
// stored events are served verbatim, and their encoding must not depend on the path taken.
func TestTextDataMatchesEncodingJSON(t *testing.T) {
	for _, text := range []string{
		"", "hello ", "Echo: ", "w1 w2", "tab\tnewline\n", `quote " backslash \`, "<html>&amp;",
		"\u2028\u2029", "héllo wörld", "\x00\x1f\x7f", "bad utf8 \xff\xfe", "emoji 🙂",
	} {
		want, err := json.Marshal(map[string]string{"text": text})
		if err != nil {
			t.Fatal(err)
		}
		if got := textData(text); string(got) != string(want) {
			t.Errorf("textData(%q) = %s, want %s", text, got, want)
		}
	}
}

func TestEncodeEventRoundTrips(t *testing.T) {
	for _, id := range []string{"exec_0123456789abcdef0123456789abcdef", `odd"id<&>`} {
		raw := encodeEvent(id, 42, api.StandardEventTypeOutputTextDelta, "2026-11-29T19:50:06.123Z", textData("hi"))
		var re api.RuntimeEvent
		if err := json.Unmarshal(raw, &re); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		delta, _ := re.Data.AsTextDeltaData()
		if re.ExecutionID != id || re.ID != id+":42" || re.Sequence != 42 || re.Type != api.StandardEventTypeOutputTextDelta ||
			re.Time != "2026-11-29T19:50:06.123Z" || delta.Text != "hi" {
			t.Fatalf("decoded %+v from %s", re, raw)
		}
		e, err := eventFromStored(42, raw)
		if err != nil || e.Sequence != 42 || e.Type != api.StandardEventTypeOutputTextDelta {
			t.Fatalf("eventFromStored: %+v, %v", e, err)
		}
		if _, err := eventFromStored(41, raw); err != nil {
			t.Fatalf("fast path trusts the key: %v", err)
		}
	}
	// A value the fast path does not recognise is decoded, and its sequence checked.
	legacy := []byte(`{"sequence":7,"type":"run.queued","data":{}}`)
	if e, err := eventFromStored(7, legacy); err != nil || e.Type != api.StandardEventTypeRunQueued {
		t.Fatalf("legacy: %+v, %v", e, err)
	}
	if _, err := eventFromStored(8, legacy); err == nil {
		t.Fatal("legacy value under the wrong key was accepted")
	}
}

func TestFinishedLogsBudgetAndLRU(t *testing.T) {
	mk := func(id string, n int) (executionRecord, []Event) {
		rec := executionRecord{Execution: api.Execution{ID: id}}
		events := make([]Event, n)
		for i := range events {
			events[i] = Event{Sequence: int64(i + 1), Type: api.StandardEventTypeOutputTextDelta, JSON: make([]byte, 100)}
		}
		return rec, events
	}
	// Each log of 10 events is 512 + 10·148 = 1992 bytes; a budget of 16 000 holds 8 of them.
	c := newFinishedLogs(16000)
	for i := range 8 {
		c.add(mk(string(rune('a'+i)), 10))
	}
	if _, ok := c.get("a"); !ok { // a is now the most recently used
		t.Fatal("a was evicted too early")
	}
	c.add(mk("i", 10)) // evicts the least recently used: b
	if _, ok := c.get("b"); ok {
		t.Fatal("b should have been evicted")
	}
	for _, id := range []string{"a", "c", "i"} {
		if _, ok := c.get(id); !ok {
			t.Fatalf("%s was evicted", id)
		}
	}
	if c.bytes > c.maxBytes {
		t.Fatalf("%d bytes over the budget of %d", c.bytes, c.maxBytes)
	}
	c.add(mk("huge", 1000)) // more than an eighth of the budget: not kept
	if _, ok := c.get("huge"); ok {
		t.Fatal("an oversized log was kept")
	}
	c.remove("a")
	if _, ok := c.get("a"); ok {
		t.Fatal("a survived remove")
	}
	l, _ := c.get("c")
	if got := l.after(7, 0); len(got) != 3 || got[0].Sequence != 8 {
		t.Fatalf("after(7) = %v", got)
	}
	if got := l.after(2, 2); len(got) != 2 || got[1].Sequence != 4 {
		t.Fatalf("after(2, 2) = %v", got)
	}
	if got := l.after(10, 0); got != nil {
		t.Fatalf("after(10) = %v", got)
	}
}

func TestExecutionIDsAreTimeOrderedAndRandom(t *testing.T) {
	shape := regexp.MustCompile(`^exec_[0-9a-f]{32}$`)
	a := newExecutionID()
	time.Sleep(2 * time.Millisecond)
	b := newExecutionID()
	if !shape.MatchString(a) || !shape.MatchString(b) {
		t.Fatalf("ids %q, %q do not have the protocol's shape", a, b)
	}
	if a >= b {
		t.Fatalf("%s was created before %s but does not sort before it", a, b)
	}
	seen := map[string]bool{}
	for range 1000 { // same millisecond, mostly: the random part keeps them distinct
		id := newExecutionID()
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
	}
}

// The group commit keeps submission order, makes writers wait (without deadlock) while
// maxQueued requests are waiting, and reports every request exactly once.
func TestGroupCommitOrderAndBackPressure(t *testing.T) {
	s, err := openBoltStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = maxQueued + 5000
	var got []int64
	results := make(chan error, n)
	release := make(chan struct{})
	var submitted atomic.Int64
	submitErr := make(chan error, 1)
	go func() {
		for i := range n {
			seq := int64(i + 1)
			b := &storeBatch{events: []storedEvent{{executionID: "exec_order", event: Event{Sequence: seq, Type: api.StandardEventTypeOutputTextDelta,
				JSON: encodeEvent("exec_order", seq, api.StandardEventTypeOutputTextDelta, "2026-11-29T00:00:00.000Z", textData("x"))}}}}
			err := s.Submit(&commitRequest{batch: b, done: func(err error) {
				if seq == 1 {
					<-release // stall the commit goroutine, so the queue fills up
				}
				got = append(got, seq) // the commit goroutine is the only writer of got
				results <- err
			}})
			if err != nil {
				submitErr <- err
				return
			}
			submitted.Add(1)
		}
		submitErr <- nil
	}()
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock() // before s.Close, which waits for the commit goroutine
	queued := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.queue)
	}
	deadline := time.Now().Add(testWait)
	for queued() < maxQueued && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	before := submitted.Load()
	time.Sleep(20 * time.Millisecond)
	if q, after := queued(), submitted.Load(); q != maxQueued || after != before || after >= n {
		t.Fatalf("with the commit goroutine stalled: %d queued (want %d), submissions went %d → %d (want the writer blocked)", q, maxQueued, before, after)
	}
	unblock()
	if err := <-submitErr; err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	for i, seq := range got {
		if seq != int64(i+1) {
			t.Fatalf("request %d reported as %d-th", seq, i+1)
		}
	}
	if last, err := s.LastSequence("exec_order"); err != nil || last != n {
		t.Fatalf("last sequence %d (%v), want %d", last, err, n)
	}
}

// testWait bounds the waits of the internal tests.
const testWait = 30 * time.Second

// Once a batch of a chain fails, the chain's later batches fail with the same error and
// are not applied (no gap in an execution's sequences); other batches are unaffected.
func TestCommitChainFailureIsFinal(t *testing.T) {
	s, err := openBoltStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var chain commitChain
	event := func(seq int64) *storeBatch {
		return &storeBatch{events: []storedEvent{{executionID: "exec_chain", event: Event{Sequence: seq, Type: api.StandardEventTypeOutputTextDelta,
			JSON: encodeEvent("exec_chain", seq, api.StandardEventTypeOutputTextDelta, "2026-11-29T00:00:00.000Z", textData("x"))}}}}
	}
	bad := event(2)
	bad.conversations = []conversationRecord{{Conversation: api.Conversation{ID: ""}}} // an empty key: bbolt refuses the Put
	type outcome struct {
		name string
		err  error
	}
	out := make(chan outcome, 5)
	submit := func(name string, b *storeBatch, chained bool) {
		req := &commitRequest{batch: b, done: func(err error) { out <- outcome{name, err} }}
		if chained {
			req.chain = &chain
		}
		if err := s.Submit(req); err != nil {
			t.Fatal(err)
		}
	}
	submit("first", event(1), true)
	submit("bad", bad, true)
	submit("after", event(3), true)
	submit("other", &storeBatch{conversations: []conversationRecord{{Conversation: api.Conversation{ID: "conv_other"}}}}, false)
	results := map[string]error{}
	for range 4 {
		o := <-out
		results[o.name] = o.err
	}
	if results["first"] != nil || results["other"] != nil {
		t.Fatalf("healthy batches failed: %v", results)
	}
	if results["bad"] == nil || results["after"] == nil || results["after"].Error() != results["bad"].Error() {
		t.Fatalf("bad: %v, after: %v; want both to fail with the same error", results["bad"], results["after"])
	}
	if last, _ := s.LastSequence("exec_chain"); last != 1 {
		t.Fatalf("last sequence %d, want 1: a batch after the failure was applied", last)
	}
	if _, found, _ := s.Conversation("conv_other"); !found {
		t.Fatal("the unrelated batch was not applied")
	}
	submit("later", event(2), true)
	if o := <-out; o.err == nil {
		t.Fatal("a later batch of the failed chain was applied")
	}
}

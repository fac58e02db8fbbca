package backend

import (
	"encoding/json"
	"errors"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The allocation-light encoders must write exactly what encoding/json writes, byte for byte:
// stored events are served verbatim, and their encoding must not depend on the path taken.
func TestStringFieldDataMatchesEncodingJSON(t *testing.T) {
	for _, text := range []string{
		"", "hello ", "Echo: ", "w1 w2", "tab\tnewline\n", `quote " backslash \`, "<html>&amp;",
		"\u2028\u2029", "héllo wörld", "\x00\x1f\x7f", "bad utf8 \xff\xfe", "emoji 🙂",
	} {
		for _, field := range []string{"text", "providerId", "finalOutput", text} {
			if field == "" {
				continue // the runtime's fields have names; an empty field is a newEvent with data
			}
			want, err := json.Marshal(map[string]string{field: text})
			if err != nil {
				t.Fatal(err)
			}
			if got := stringFieldData(field, text); string(got) != string(want) {
				t.Errorf("stringFieldData(%q, %q) = %s, want %s", field, text, got, want)
			}
			if got := stringEvent("x", field, text).dataLen(); got != len(want) {
				t.Errorf("dataLen of {%q: %q} = %d, want %d", field, text, got, len(want))
			}
		}
	}
}

func TestEncodeEventRoundTrips(t *testing.T) {
	for _, id := range []string{"exec_0123456789abcdef0123456789abcdef", `odd"id<&>`} {
		raw := textEvent(api.StandardEventTypeOutputTextDelta, "hi").encode(id, 42, "2026-11-29T19:50:06.123Z")
		var re api.RuntimeEvent
		if err := json.Unmarshal(raw, &re); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		delta, _ := re.Data.AsTextDeltaData()
		if re.ExecutionID != id || re.ID != id+":42" || re.Sequence != 42 || re.Type != api.StandardEventTypeOutputTextDelta ||
			re.Time != "2026-11-29T19:50:06.123Z" || delta.Text != "hi" {
			t.Fatalf("decoded %+v from %s", re, raw)
		}
		// What the encoder writes passes the full check an upgrade gives every stored event.
		e, err := store.LegacyEvent(42, []byte(api.StandardEventTypeOutputTextDelta), true, raw)
		if err != nil || e.Sequence != 42 || e.Type != api.StandardEventTypeOutputTextDelta {
			t.Fatalf("LegacyEvent: %+v, %v", e, err)
		}
		if _, err := store.LegacyEvent(41, nil, false, raw); !errors.Is(err, store.ErrUndecodable) {
			t.Fatalf("an event stored under another sequence's key: %v, want ErrUndecodable", err)
		}
	}
}

func TestFinishedLogsBudgetAndLRU(t *testing.T) {
	mk := func(id string, n int) (store.Execution, []Event) {
		rec := store.Execution{Execution: api.Execution{ID: id}}
		events := make([]Event, n)
		for i := range events {
			events[i] = Event{Sequence: int64(i + 1), Type: api.StandardEventTypeOutputTextDelta, JSON: make([]byte, 100)}
		}
		return rec, events
	}
	// A budget of eight and a half logs of 10 events holds 8 of them.
	rec, events := mk("a", 10)
	one, ok := newFinishedLog(rec, events, 1<<20) // its size: the events, the record's JSON, the entry
	if !ok || one.size < 10*100 {
		t.Fatalf("a log of 10 events of 100 bytes: %v, size %d", ok, one.size)
	}
	c := newFinishedLogs(8*one.size + one.size/2)
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

// Ids made one after the other sort in the order they were made, also within one millisecond
// (listings order by creation time, then id: a conversation's queue and waitingFor are listed
// in arrival order), also from goroutines at once, and stay distinct.
func TestExecutionIDsSortInCreationOrderWithinAMillisecond(t *testing.T) {
	ids := make([]string, 2000) // 2,000 in a row span few milliseconds: most share one
	for i := range ids {
		ids[i] = newExecutionID()
	}
	for i := 1; i < len(ids); i++ {
		if ids[i-1] >= ids[i] {
			t.Fatalf("id %d %s does not sort after id %d %s, made before it", i, ids[i], i-1, ids[i-1])
		}
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			last := ""
			for range 500 {
				id := newExecutionID()
				if id <= last {
					t.Errorf("one goroutine's ids out of order: %s after %s", id, last)
				}
				last = id
				mu.Lock()
				if seen[id] {
					t.Errorf("duplicate id %s", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// now hands out the text of the current millisecond, also when it was formatted before (the
// cache): never a stale one, never one from the future.
func TestNowIsTheCurrentMillisecond(t *testing.T) {
	prev := time.Time{}
	for range 2000 {
		before := time.Now().Truncate(time.Millisecond)
		got, err := parseTimestamp(now())
		after := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		if got.Before(before) || got.After(after) || got.Before(prev) {
			t.Fatalf("now() = %s, asked between %s and %s (previous %s)", got, before, after, prev)
		}
		prev = got
	}
}

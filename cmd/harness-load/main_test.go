package main

import (
	"strings"
	"testing"
	"time"
)

func TestRequireLoopback(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:4310", "http://localhost:1", "https://[::1]:8443/prefix", "http://127.1.2.3"} {
		if err := requireLoopback(ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://10.0.0.1:4310", "http://example.com", "http://0.0.0.0:4310", "ftp://127.0.0.1", "127.0.0.1:4310", "http://localhost.example.com"} {
		if err := requireLoopback(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestReadSSE(t *testing.T) {
	stream := "retry: 1000\nid: 1\nevent: run.queued\ndata: {\"a\":1}\n\n" +
		": keep-alive\n\n" +
		"id:2\r\nevent:output.text.delta\r\ndata: x\r\ndata: y\r\n\r\n" +
		"id: 3\nevent: run.completed\ndata: " + strings.Repeat("z", 100) + "\n\n" +
		"id: 4\nevent: never\ndata: {}\n\n"
	var got []string
	err := readSSE(strings.NewReader(stream), 16, func(ev wireEvent) bool {
		got = append(got, ev.typ+"#"+string(ev.data))
		return !isTerminalType(ev.typ)
	})
	if err != errStopStream {
		t.Fatalf("err %v, want errStopStream", err)
	}
	comments := 0
	if err := readSSEWithComments(strings.NewReader(stream), 16, func(wireEvent) bool { return true }, func() { comments++ }); err != nil || comments != 1 {
		t.Fatalf("readSSEWithComments: %d comments, err %v; want the one keep-alive", comments, err)
	}
	want := []string{`run.queued#{"a":1}`, "output.text.delta#x\ny", "run.completed#" + strings.Repeat("z", 100)}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestEventTime(t *testing.T) {
	raw := []byte(`{"data":{"time":"1999-01-01T00:00:00.000Z"},"executionId":"exec_1","id":"exec_1:1","sequence":1,"time":"2026-11-29T19:50:06.123Z","type":"run.queued"}`)
	got, ok := eventTime(raw)
	if want := time.Date(2026, 11, 29, 19, 50, 6, 123e6, time.UTC); !ok || !got.Equal(want) {
		t.Fatalf("eventTime = %v, %v; want %v (the envelope's, not the data's)", got, ok, want)
	}
	if _, ok := eventTime([]byte(`{"time":"bad"}`)); ok {
		t.Fatal("a malformed time was accepted")
	}
}

func TestSummarize(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 100; i++ {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	got := summarize(s)
	if got.Count != 100 || got.P50 != 50 || got.P99 != 99 || got.Max != 100 || got.Mean != 50.5 {
		t.Fatalf("summary %+v", got)
	}
	if (summarize(nil) != Summary{}) {
		t.Fatal("empty summary is not zero")
	}
}

func TestWordsAndNumbers(t *testing.T) {
	if got := words(3); got != "w1 w2 w3" {
		t.Fatalf("words(3) = %q", got)
	}
	if got := fmtNum(1234567.4); got != "1,234,567" {
		t.Fatalf("fmtNum = %q", got)
	}
}

// parseEventTime agrees with time.Parse: what it reads, time.Parse reads the same, and it reads
// every time in the events' format (time.Parse also takes some variants, like "T1:" or ",000").
func FuzzParseEventTime(f *testing.F) {
	for _, s := range []string{"2026-12-01T00:00:00.000Z", "2024-02-29T23:59:59.999Z", "2025-02-29T00:00:00.000Z", "2026-13-01T00:00:00.000Z", "2026-12-01T24:00:00.000Z", "2026-12-01T00:00:60.000Z", "2026-12-01 00:00:00.000Z", "+026-12-01T00:00:00.000Z"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		const layout = "2006-01-02T15:04:05.000Z"
		got, ok := parseEventTime(b)
		want, err := time.Parse(layout, string(b))
		canonical := err == nil && want.Format(layout) == string(b)
		if ok && (err != nil || !got.Equal(want)) || canonical && !ok {
			t.Fatalf("%q: parseEventTime %v, %v; time.Parse %v, %v", b, got, ok, want, err)
		}
	})
}

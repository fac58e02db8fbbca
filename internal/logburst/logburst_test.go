package logburst

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Identical errors (same message, same root cause, whatever wraps it) make one line and a
// count; another root cause is another burst; nothing is logged after stop.
func TestBurstLoggerCountsRepeats(t *testing.T) {
	var out bytes.Buffer
	b := New(slog.New(slog.NewTextHandler(&out, nil)), time.Hour)
	for i := range 5 {
		b.Error("store refused", fmt.Errorf("put event exec_%d: %w", i, syscall.ENOSPC), "execution", i)
	}
	b.Error("store refused", errors.New("input/output error"))
	b.Stop()
	b.Error("store refused", syscall.ENOSPC)

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want the first of each burst and one summary:\n%s", len(lines), out.String())
	}
	if !strings.Contains(lines[0], "execution=0") || !strings.Contains(lines[1], "input/output error") {
		t.Fatalf("first lines:\n%s", out.String())
	}
	if !strings.Contains(lines[2], `msg="store refused (repeated)" repeats=4`) {
		t.Fatalf("summary: %s", lines[2])
	}
}

// Flush reports the repeats so far and closes the burst, and the Logger goes on: the next
// occurrence is logged at once.
func TestFlushKeepsLogging(t *testing.T) {
	var out bytes.Buffer
	b := New(slog.New(slog.NewTextHandler(&out, nil)), time.Hour)
	for range 3 {
		b.Error("request failed", syscall.ENOSPC)
	}
	b.Flush()
	b.Error("request failed", syscall.ENOSPC)
	b.Stop()

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "repeats=2") || strings.Contains(lines[2], "repeated") {
		t.Fatalf("want the first line, a summary of 2 repeats, and the next occurrence:\n%s", out.String())
	}
}

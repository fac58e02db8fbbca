package sdk

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// endless is a body that never runs dry.
type endless struct{ chunk []byte }

func (e endless) Read(p []byte) (int, error) { return copy(p, e.chunk), nil }
func (endless) Close() error                 { return nil }

// BenchmarkWatchedBodyRead prices the watchdog on a stream: one Read of a 4 KiB chunk, as
// go-sse's parser does them, with the watchdog armed and disarmed around it, and without.
func BenchmarkWatchedBodyRead(b *testing.B) {
	chunk := bytes.Repeat([]byte("x"), 4096)
	buf := make([]byte, len(chunk))
	b.Run("plain", func(b *testing.B) {
		var body io.ReadCloser = endless{chunk}
		b.SetBytes(int64(len(chunk)))
		for b.Loop() {
			_, _ = body.Read(buf)
		}
	})
	b.Run("watched", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var body io.ReadCloser = &watchedBody{body: endless{chunk}, dog: newWatchdog(time.Minute, cancel), cancel: cancel}
		b.SetBytes(int64(len(chunk)))
		for b.Loop() {
			_, _ = body.Read(buf)
		}
		if ctx.Err() != nil {
			b.Fatal("the watchdog fired")
		}
	})
}

// A Read that waits longer than the timeout fails with the stall error and cancels the try;
// time between Reads does not count.
func TestWatchedBodyCountsOnlyWaitingReads(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	body := &watchedBody{body: pr, dog: newWatchdog(50*time.Millisecond, cancel), cancel: cancel}
	go func() {
		_, _ = pw.Write([]byte("a"))
		<-ctx.Done() // then silence until the watchdog cancels the try
		_ = pw.CloseWithError(ctx.Err())
	}()
	buf := make([]byte, 8)
	if n, err := body.Read(buf); n != 1 || err != nil {
		t.Fatalf("first Read = %d, %v", n, err)
	}
	time.Sleep(150 * time.Millisecond) // the reader is busy: not silence
	if ctx.Err() != nil {
		t.Fatal("the watchdog fired while nobody was reading")
	}
	if _, err := body.Read(buf); !errors.Is(err, errStalled) {
		t.Fatalf("a Read the server left waiting = %v, want the stall error", err)
	}
	if ctx.Err() == nil {
		t.Fatal("the try was not cancelled")
	}
}

package discovery_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/providers/internal/discovery"
)

var (
	errDown  = errors.New("connection refused")
	errWrong = errors.New("answers, but not what we need")
)

// reads answers with the errors in order, then nil.
func reads(errs ...error) (func(context.Context) error, *atomic.Int64) {
	var n atomic.Int64
	return func(context.Context) error {
		i := int(n.Add(1)) - 1
		if i < len(errs) {
			return errs[i]
		}
		return nil
	}, &n
}

func config(read func(context.Context) error) discovery.Config {
	return discovery.Config{
		Read:         read,
		Final:        func(err error) bool { return errors.Is(err, errWrong) },
		FirstTimeout: time.Second,
		RetryTimeout: time.Second,
		What:         "the peer's description",
	}
}

// A peer that is down at Start: Start returns at once, the reads go on in the background, and
// the watchers are told once the description arrives.
func TestPeerDownAtStartIsReadInTheBackground(t *testing.T) {
	read, n := reads(errDown, errDown)
	d := discovery.New(config(read))
	told := make(chan struct{}, 2)
	d.Watch(func() { told <- struct{}{} })
	if err := d.Start(context.Background()); err != nil {
		t.Fatalf("Start with the peer down: %v, want nil (served without it)", err)
	}
	select {
	case <-told:
	case <-time.After(30 * time.Second):
		t.Fatal("the watcher was not told when the description arrived")
	}
	if got := n.Load(); got != 3 {
		t.Fatalf("%d reads, want 3 (two failures, then the one that succeeded)", got)
	}
	d.Close()
	select {
	case <-told:
		t.Fatal("the watcher was told twice")
	default:
	}
}

// A final answer at Start is returned and nothing goes on in the background.
func TestFinalAnswerAtStartIsReturned(t *testing.T) {
	read, n := reads(errWrong)
	d := discovery.New(config(read))
	if err := d.Start(context.Background()); !errors.Is(err, errWrong) {
		t.Fatalf("Start = %v, want the final answer", err)
	}
	time.Sleep(700 * time.Millisecond) // longer than the first backoff: a retry would show
	if got := n.Load(); got != 1 {
		t.Fatalf("%d reads after a final answer, want 1", got)
	}
	d.Close()
}

// GiveUp stops the background reads; without it they go on past such an answer.
func TestGiveUpStopsTheBackgroundReads(t *testing.T) {
	for _, giveUp := range []bool{true, false} {
		read, n := reads(errDown, errWrong)
		cfg := config(read)
		if giveUp {
			cfg.GiveUp = func(err error) bool { return errors.Is(err, errWrong) }
		}
		d := discovery.New(cfg)
		told := make(chan struct{}, 1)
		d.Watch(func() { told <- struct{}{} })
		if err := d.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-told:
			if giveUp {
				t.Fatal("told of a description after giving up")
			}
		case <-time.After(3 * time.Second):
			if !giveUp {
				t.Fatal("without GiveUp the reads stopped at an answer they could retry")
			}
			if got := n.Load(); got != 2 {
				t.Fatalf("%d reads, want 2 (down, then the answer it gave up on)", got)
			}
		}
		d.Close()
	}
}

// Close ends the background reads of a peer that never answers, and returns once they ended.
func TestCloseEndsTheBackgroundReads(t *testing.T) {
	var n atomic.Int64
	d := discovery.New(config(func(context.Context) error { n.Add(1); return errDown }))
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	d.Close()
	after := n.Load()
	time.Sleep(700 * time.Millisecond)
	if got := n.Load(); got != after {
		t.Fatalf("%d reads after Close, want none", got-after)
	}
}

package main

import (
	"context"
	"testing"
)

// -streams-rate: no pacer without a rate (starts at once while the context lives); with one,
// starts come one by one, and none after the context ends.
func TestStartPacer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if p := startPacer(ctx, 0); p != nil || !awaitStart(ctx, p) {
		t.Fatal("rate 0: want no pacer and a start at once")
	}
	p := startPacer(ctx, 1000)
	for range 3 {
		if !awaitStart(ctx, p) {
			t.Fatal("rate 1000: no start")
		}
	}
	cancel()
	if awaitStart(ctx, p) || awaitStart(ctx, nil) {
		t.Fatal("a start after the context ended")
	}
}

package main

import (
	"testing"
	"time"
)

// The lag splits per log position into its first receipt (event time → the first subscriber:
// commit and publication) and its spread (first → last subscriber: the fan-out itself).
func TestFirstReceiptAndSpread(t *testing.T) {
	sub := func(samples ...lagSample) *logSubscriber {
		s := &logSubscriber{}
		for _, x := range samples {
			s.lags.add(x.pos, x.lag)
		}
		return s
	}
	ms := time.Millisecond
	subs := []*logSubscriber{
		sub(lagSample{1, 3 * ms}, lagSample{2, 10 * ms}),
		sub(lagSample{1, 5 * ms}, lagSample{2, 4 * ms}),
		sub(lagSample{1, 9 * ms}), // position 2 was not meant for it
	}
	first, spread := firstReceiptAndSpread(subs)
	// Firsts: 3 ms (position 1), 4 ms (position 2). Spreads: 6 ms, 6 ms.
	if first.Count != 2 || first.P50 != 3 || first.Max != 4 {
		t.Errorf("first receipt: %+v, want 2 positions, p50 3 ms, max 4 ms", first)
	}
	if spread.Count != 2 || spread.P50 != 6 || spread.Max != 6 {
		t.Errorf("spread: %+v, want 2 positions of 6 ms", spread)
	}
	if all := allLags(subs); all.Count != 5 || all.Max != 10 {
		t.Errorf("every lag: %+v, want 5 samples, max 10 ms", all)
	}
}

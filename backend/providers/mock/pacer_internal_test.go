package mock

import (
	"context"
	"testing"
	"time"
)

// The pause between deltas reuses one timer: after the first, a pause allocates nothing (a
// live execution pauses once per event).
func TestPacerAllocatesNothingPerPause(t *testing.T) {
	var p pacer
	defer p.stop()
	ctx := context.Background()
	if err := p.sleep(ctx, time.Microsecond); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(20, func() {
		if err := p.sleep(ctx, time.Microsecond); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%.1f allocations per pause, want 0", n)
	}
}

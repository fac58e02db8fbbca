package run

import (
	"slices"
	"testing"
	"time"
)

// A seed gives one schedule: the same seed the same steps, another seed other steps; and the
// first steps cover every kind the store can run, so a short run with any seed injects each.
func TestPlanIsTheSeeds(t *testing.T) {
	nodes := []string{"a", "b", "c"}
	kinds := FaultKinds("postgres")
	first := plan(42, time.Minute, 5*time.Second, 0, nodes, kinds)
	if again := plan(42, time.Minute, 5*time.Second, 0, nodes, kinds); !slices.Equal(first, again) {
		t.Fatalf("seed 42 gave two schedules:\n%v\n%v", first, again)
	}
	if other := plan(43, time.Minute, 5*time.Second, 0, nodes, kinds); slices.Equal(first, other) {
		t.Fatal("seeds 42 and 43 gave the same schedule")
	}
	for _, seed := range []int64{1, 2, 3, 42, 1 << 40} {
		steps := plan(seed, 30*time.Second, 5*time.Second, 0, nodes, kinds)
		seen := map[string]bool{}
		for _, s := range steps {
			seen[s.Kind] = true
		}
		for _, k := range kinds {
			if !seen[k] {
				t.Errorf("seed %d, 30 s: no %s in %v", seed, k, steps)
			}
		}
	}
}

// Faults overlap, but a target carries one at a time and at least one node stays up.
func TestPlanKeepsANodeUp(t *testing.T) {
	nodes := []string{"a", "b", "c"}
	for seed := int64(1); seed <= 50; seed++ {
		steps := plan(seed, 2*time.Minute, 5*time.Second, 0, nodes, FaultKinds("postgres"))
		for i, s := range steps {
			down := map[string]bool{}
			for _, o := range steps[:i] {
				if o.At+o.Hold+time.Second > s.At && takesNodeAway(o.Kind) {
					down[o.Target] = true
				}
				if o.Target == s.Target && o.At+o.Hold+time.Second > s.At {
					t.Fatalf("seed %d: %v begins while %v still holds %s", seed, s, o, s.Target)
				}
			}
			if takesNodeAway(s.Kind) && len(down)+1 >= len(nodes) {
				t.Fatalf("seed %d: %v takes the last node away (down: %v)", seed, s, down)
			}
		}
	}
}

package run

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// The fault kinds the schedule draws from (the history's "fault" values for a start; stop ends
// with "cont" and a cut with "heal" in the same fault's end line).
const (
	faultKill       = "kill"
	faultStop       = "stop"
	faultCutSilent  = "cut-silent"
	faultCutReset   = "cut-reset"
	faultPGCrash    = "pg-crash"
	faultPGStall    = "pg-stall"
	faultReload     = "reload"
	faultValidate   = "validate"
	faultOverload   = "overload"
	faultSlowReader = "slow-reader"
)

// FaultKinds lists every kind, for the store each can run on.
func FaultKinds(store string) []string {
	if store == "bolt" {
		return []string{faultKill, faultStop, faultReload, faultValidate, faultOverload, faultSlowReader}
	}
	return []string{faultKill, faultStop, faultCutSilent, faultCutReset, faultPGCrash, faultPGStall,
		faultReload, faultValidate, faultOverload, faultSlowReader}
}

// step is one fault of the schedule: at At after the run's start, Kind on Target, undone Hold
// later (kill: restarted; stop: continued; cut: healed; pg-crash: restarted; pg-stall: resumed;
// overload and slow-reader: that long). Size is the kind's own magnitude (overload: starts).
type step struct {
	At     time.Duration
	Kind   string
	Target string
	Hold   time.Duration
	Size   int
}

func (s step) String() string {
	return fmt.Sprintf("%7.2fs %-11s %-8s hold %s", s.At.Seconds(), s.Kind, s.Target, s.Hold.Round(10*time.Millisecond))
}

// plan is the seed's schedule of faults over duration: first every kind once in a seeded
// order (so a short run still covers them all), then kinds drawn at random, a fault every gap
// on average (0: the first round spread over 60 % of the run, at most two leases apart); gaps and holds are
// drawn too, so faults overlap. A target carries one fault at a time, the database one at a
// time, and at most all nodes but one are down at once (clients always have somewhere to go;
// the quiet period checks liveness of the rest). The same seed gives the same plan.
func plan(seed int64, duration, lease, gap time.Duration, nodes []string, kinds []string) []step {
	rng := rand.New(rand.NewPCG(uint64(seed), streamSchedule))
	order := append([]string(nil), kinds...)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	busyUntil := map[string]time.Duration{}
	var out []step
	// The mean gap spreads the first round of kinds over the first 60 % of the run.
	// Capped at two leases: a long run keeps a steady pace (an hour's run injects hundreds of
	// faults, not a dozen), overlapping the longest holds.
	meanGap := min(duration*6/10/time.Duration(len(kinds)+1), 2*lease)
	if gap > 0 {
		meanGap = gap
	}
	at := between(rng, meanGap/2, meanGap)
	for i := 0; at < duration; i++ {
		kind := order[i%len(order)]
		if i >= len(order) {
			kind = kinds[rng.IntN(len(kinds))]
		}
		s := step{At: at, Kind: kind}
		switch kind {
		case faultPGCrash, faultPGStall:
			s.Target = "postgres"
		default:
			s.Target = nodes[rng.IntN(len(nodes))]
		}
		s.Hold, s.Size = hold(rng, kind, lease)
		at += between(rng, meanGap/2, meanGap*3/2)
		if !free(s, busyUntil, nodes) {
			// Another node, if one is free; else the step waits for the next gap.
			moved := false
			for _, n := range nodes {
				if c := s; c.Target != "postgres" {
					c.Target = n
					if free(c, busyUntil, nodes) {
						s, moved = c, true
						break
					}
				}
			}
			if !moved {
				i-- // the same kind again at the next time
				continue
			}
		}
		busyUntil[s.Target] = s.At + s.Hold + time.Second
		out = append(out, s)
	}
	return out
}

// free says whether s may begin: its target carries no fault, and a fault that takes a node
// away leaves at least one other node up.
func free(s step, busyUntil map[string]time.Duration, nodes []string) bool {
	if busyUntil[s.Target] > s.At {
		return false
	}
	if s.Target == "postgres" || !takesNodeAway(s.Kind) {
		return true
	}
	down := 0
	for _, n := range nodes {
		if busyUntil[n] > s.At {
			down++
		}
	}
	return down+1 < len(nodes) || len(nodes) == 1
}

func takesNodeAway(kind string) bool {
	switch kind {
	case faultKill, faultStop, faultCutSilent, faultCutReset:
		return true
	}
	return false
}

// hold draws how long a fault lasts: around the lease for the faults that cost a node its lease
// (some shorter, a pause a node survives; some longer, a takeover), short for the database.
func hold(rng *rand.Rand, kind string, lease time.Duration) (time.Duration, int) {
	switch kind {
	case faultKill:
		return between(rng, lease/2, lease*2), 0
	case faultStop, faultCutSilent, faultCutReset:
		return between(rng, lease/5, lease*2), 0
	case faultPGCrash:
		return between(rng, 500*time.Millisecond, 3*time.Second), 0
	case faultPGStall:
		return between(rng, 500*time.Millisecond, lease), 0
	case faultOverload:
		return between(rng, time.Second, 3*time.Second), 20 + rng.IntN(40)
	case faultSlowReader:
		return between(rng, 2*time.Second, 6*time.Second), 0
	}
	return 0, 0 // reload, validate: as long as the command runs
}

func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// Streams of the seed's random numbers: the schedule's, and one per client (streamClient + i),
// so that adding a client leaves the others' choices and the schedule as they were.
const (
	streamSchedule = 0x5343484544
	streamClient   = 0x434c49454e54
	streamFault    = 0x4641554c54
)

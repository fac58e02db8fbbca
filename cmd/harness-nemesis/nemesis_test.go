package main

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
	"github.com/harness-edge/harness-edge/internal/nemesis/run"
	"github.com/harness-edge/harness-edge/internal/pgtest"
	"github.com/harness-edge/harness-edge/internal/testutil"
)

// The nodes run bin/caddy without the race detector, as faults/ runs them: what is under test
// is timing (leases of seconds), which an instrumented node would turn into noise.
var caddyBinary = testutil.GoBinary{Package: "../caddy"}

func TestMain(m *testing.M) {
	code := m.Run()
	caddyBinary.Remove()
	caddyKnownFault.Remove()
	os.Exit(code)
}

// The lean schedule of `make test`: fixed seeds, short runs, every fault kind injected on the
// store that has it (the PostgreSQL cluster: all ten; one bbolt node: its six), the history
// checked. About 100 s in all: a PostgreSQL run of 28 s plus its 25 s quiet period, a bbolt run
// of 22 s plus its 13 s. Each seed's schedule was chosen because its first round of faults fits
// its duration (harness-nemesis -plan shows a seed's schedule). A failure prints the checker's violations and the replay command.
func TestLeanSchedule(t *testing.T) {
	pgtest.RequireBinaries(t)
	caddy := caddyBinary.Path(t)
	for _, c := range []struct {
		store, seed, duration string
	}{
		{"postgres", "20261203", "28s"},
		{"bolt", "45", "22s"},
	} {
		t.Run(c.store, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "history.jsonl")
			var out, errs bytes.Buffer
			code := runNemesis([]string{"-seed", c.seed, "-duration", c.duration, "-store", c.store,
				"-history", path, "-caddy", caddy, "-clients", "6"}, &out, &errs)
			if code != 0 {
				t.Fatalf("harness-nemesis exited %d:\n%s\n%s", code, out.String(), errs.String())
			}
			lines, err := history.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			injected := map[string]bool{}
			events, finals, deletes, deleted := 0, 0, 0, 0
			for _, l := range lines {
				switch l.Kind {
				case history.KindRequest:
					if l.Request.Op == "deleteConversation" {
						deletes++
						if l.Request.OK() {
							deleted++
						}
					}
				case history.KindFault:
					injected[l.Fault.Fault] = true
				case history.KindEvent:
					events++
				case history.KindFinal:
					finals++
				}
			}
			for _, kind := range run.FaultKinds(c.store) {
				if !injected[kind] {
					t.Errorf("seed %s on %s injected no %s (injected: %v)", c.seed, c.store, kind, slices.Sorted(maps.Keys(injected)))
				}
			}
			if events == 0 || finals == 0 {
				t.Errorf("the history holds %d events and %d final reads: the clients saw nothing to check", events, finals)
			}
			if deletes == 0 { // the checker's delete rules had nothing to hold
				t.Errorf("seed %s on %s: the clients sent no DELETE /v1/conversations/{id}", c.seed, c.store)
			}
			t.Logf("seed %s on %s: %d history lines, %d events, %d final reads, %d deletes (%d answered 200)", c.seed, c.store, len(lines), events, finals, deletes, deleted)
		})
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// timelineRow is one row of the console's timeline as the page shows it (data attributes).
type timelineRow struct {
	Phase string
	Label string
	MS    int64 // how long the span took; 0 for a point
	At    int64 // when it began, ms after the execution was queued
	Open  bool
}

// requireTimeline checks the finished execution's timeline against the server's stored events:
// how long it was queued, how long it waited for the approval, how long it ran, and when it
// ended, to the millisecond (the server's timestamps have three fractional digits).
func requireTimeline(t *testing.T, page *browserPage, events []api.RuntimeEvent) {
	t.Helper()
	at := map[api.StandardEventType]time.Time{}
	for _, ev := range events {
		if _, seen := at[api.StandardEventType(ev.Type)]; seen {
			continue // the first of each type
		}
		ts, err := time.Parse(time.RFC3339Nano, ev.Time)
		if err != nil {
			t.Fatalf("event %s time %q: %v", ev.ID, ev.Time, err)
		}
		at[api.StandardEventType(ev.Type)] = ts
	}
	ms := func(from, to api.StandardEventType) int64 { return at[to].Sub(at[from]).Milliseconds() }
	// The page redraws its timeline at most every 30 ms (a burst of events is drawn once), so the
	// terminal event can be listed a moment before the timeline shows its end row.
	page.waitJS(`document.querySelector('#timeline li[data-phase="end"]') !== null`)
	rows := evaluate[[]timelineRow](page, `[...document.querySelectorAll('#timeline li')].map(li => ({Phase: li.dataset.phase,
		Label: li.querySelector('.label').textContent, MS: Number(li.dataset.ms), At: Number(li.dataset.at), Open: li.dataset.open === 'true'}))`)
	find := func(phase string) timelineRow {
		for _, r := range rows {
			if r.Phase == phase {
				return r
			}
		}
		t.Fatalf("the timeline has no %s row: %+v", phase, rows)
		return timelineRow{}
	}
	want := map[string][2]int64{ // phase: {began at, took}
		"queued":  {0, ms(api.StandardEventTypeRunQueued, api.StandardEventTypeRunStarted)},
		"running": {ms(api.StandardEventTypeRunQueued, api.StandardEventTypeRunStarted), ms(api.StandardEventTypeRunStarted, api.StandardEventTypeRunCompleted)},
		"waiting": {ms(api.StandardEventTypeRunQueued, api.StandardEventTypeActionRequired), ms(api.StandardEventTypeActionRequired, api.StandardEventTypeActionResponded)},
		"end":     {ms(api.StandardEventTypeRunQueued, api.StandardEventTypeRunCompleted), 0},
	}
	for phase, w := range want {
		r := find(phase)
		if r.At != w[0] || r.MS != w[1] || r.Open {
			t.Errorf("timeline row %s: at +%d ms for %d ms (open %v), the stored events say +%d ms for %d ms", phase, r.At, r.MS, r.Open, w[0], w[1])
		}
	}
	if r := find("waiting"); r.Label != "Waiting for approval: Approve mock execution" {
		t.Errorf("waiting row labelled %q", r.Label)
	}
	if r := find("end"); r.Label != "Succeeded" {
		t.Errorf("end row labelled %q", r.Label)
	}
}

// overviewFigures is what the overview shows: the headline figures (their data-value) and the
// "by state" table.
type overviewFigures struct {
	Total, Ended int
	P50, P99     string // milliseconds, "" when nothing ended
	States       map[string]int
	Starts       int // the sum of the "starts" table
	Tokens       int // the executions' total tokens (their snapshots' usage)
}

const readOverview = `(() => {
	const v = (id) => document.getElementById(id)?.dataset.value ?? '';
	const states = {};
	for (const tr of document.querySelectorAll('#chart-states tbody tr[data-key]')) states[tr.dataset.key] = Number(tr.cells[1].textContent);
	const starts = [...document.querySelectorAll('#chart-starts tbody tr[data-key]')].reduce((n, tr) => n + Number(tr.cells[1].textContent), 0);
	return {Total: Number(v('ov-total')), Ended: Number(v('ov-ended')), P50: v('ov-p50'), P99: v('ov-p99'), States: states, Starts: starts, Tokens: Number(v('ov-tokens'))};
})()`

// wantOverview computes from the server's listing what the overview must show for executions
// created in the last hour that match keep: counts by state, and the nearest-rank p50 and p99 of
// the ended ones' creation-to-end durations.
func wantOverview(t *testing.T, c *client, keep func(api.Execution) bool) overviewFigures {
	t.Helper()
	return wantOverviewSince(t, c, time.Hour, keep)
}

// wantOverviewSince is wantOverview for another time window.
func wantOverviewSince(t *testing.T, c *client, window time.Duration, keep func(api.Execution) bool) overviewFigures {
	t.Helper()
	var list api.ExecutionList
	if err := json.Unmarshal(c.getRaw("/v1/executions?limit=200"), &list); err != nil {
		t.Fatal(err)
	}
	if list.NextCursor != nil {
		t.Fatal("more than 200 executions: the test would have to page")
	}
	since := time.Now().Add(-window)
	f := overviewFigures{States: map[string]int{}}
	for _, s := range []string{"queued", "running", "awaiting_input", "awaiting_approval", "cancelling", "succeeded", "failed", "cancelled"} {
		f.States[s] = 0
	}
	var durations []int64
	for _, x := range list.Executions {
		created := mustTime(t, x.CreatedAt)
		if created.Before(since) || !keep(x) {
			continue
		}
		f.Total++
		f.States[string(x.State)]++
		if x.Usage != nil && x.Usage.TotalTokens != nil {
			f.Tokens += int(*x.Usage.TotalTokens)
		}
		if x.EndedAt != nil {
			durations = append(durations, mustTime(t, *x.EndedAt).Sub(created).Milliseconds())
		}
	}
	f.Ended = len(durations)
	f.Starts = f.Total
	slices.Sort(durations)
	rank := func(p float64) string {
		if len(durations) == 0 {
			return ""
		}
		return fmt.Sprint(durations[max(0, int(math.Ceil(p/100*float64(len(durations))))-1)])
	}
	f.P50, f.P99 = rank(50), rank(99)
	return f
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	return ts
}

// requireOverview waits until the overview shows want (it refreshes on its own, every few
// seconds) and fails with both when it does not within a step's time.
func requireOverview(t *testing.T, page *browserPage, want overviewFigures) {
	t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for {
		got := evaluate[overviewFigures](page, readOverview)
		if reflect.DeepEqual(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the overview shows %+v, the server's listing says %+v", got, want)
		}
		time.Sleep(100 * time.Millisecond) // polling the page, as waitJS does
	}
}

// twoProviderCaddyfile is examples/Caddyfile with a second mock provider, "other", so that the
// overview's provider filter has something to tell apart.
func twoProviderCaddyfile(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(exampleCaddyfile)
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Abs(filepath.Dir(exampleCaddyfile))
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	for old, repl := range map[string]string{
		"\t\tprovider mock\n":         "\t\tprovider mock\n\t\tprovider mock other\n",
		"import problem-errors.caddy": "import " + filepath.Join(examples, "problem-errors.caddy"),
	} {
		if !strings.Contains(text, old) {
			t.Fatalf("examples/Caddyfile no longer contains %q", old)
		}
		text = strings.Replace(text, old, repl, 1)
	}
	path := filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

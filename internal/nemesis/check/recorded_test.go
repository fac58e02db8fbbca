package check

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"
)

// testdata/postgres-seed21.jsonl.gz is a real history: harness-nemesis
// -seed 21 -duration 50s -clients 4 on three bin/caddy nodes over
// PostgreSQL 15, every fault kind injected (2,941 lines). The checker must
// pass it, and catch it when it is doctored.
func recorded(t *testing.T) *scenario {
	t.Helper()
	f, err := os.Open("testdata/postgres-seed21.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	s := &scenario{}
	sc := bufio.NewScanner(z)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		s.entries = append(s.entries, entry{fmt.Sprint("L", len(s.entries)+1), sc.Text()})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

// The recorded history breaks one promise, a real bug the nemesis found:
// an expiry answered through a cluster command is recorded as a user named
// "expiry" (backend/cluster/commands.go withActorOf keeps the actor's id and
// drops its kind). Everything else in it holds.
func TestRecordedHistoryHoldsButForTheMisattributedExpiry(t *testing.T) {
	rep := recorded(t).check(t)
	if len(rep.Violations) != 1 || rep.Violations[0].Name != AnswerMisattributed ||
		rep.Violations[0].ExecutionID != "exec_01a23c2937455dd1911ab634e1533daf" {
		t.Fatalf("want exactly the misattributed expiry; got:\n%s", describe(rep))
	}
	for _, kind := range []string{"kill", "stop", "cut-silent", "cut-reset", "pg-crash", "pg-stall", "reload", "validate", "overload", "slow-reader"} {
		if rep.Faults[kind] == 0 {
			t.Errorf("no %s fault in the recorded history", kind)
		}
	}
	if rep.Linearized < 50 || rep.Events < 2000 {
		t.Fatalf("linearized %d executions, checked %d events: the fixture is not what it was", rep.Linearized, rep.Events)
	}
}

type lineFields struct {
	Kind         string    `json:"kind"`
	T            time.Time `json:"t"`
	Subscription string    `json:"subscription"`
	Filtered     bool      `json:"filtered"`
	ExecutionID  string    `json:"executionId"`
	Sequence     int64     `json:"sequence"`
	Op           string    `json:"op"`
	Status       int       `json:"status"`
	State        string    `json:"state"`
	Answer       struct {
		ID    string `json:"id"`
		State string `json:"state"`
	} `json:"answer"`
}

func (s *scenario) fields(t *testing.T, i int) lineFields {
	t.Helper()
	var f lineFields
	if err := json.Unmarshal([]byte(s.entries[i].text), &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// followed lists the labels of unfiltered event lines between the same
// execution's previous and next sequence on their subscription: dropping
// one of them must leave a gap.
func followed(t *testing.T, s *scenario) []string {
	type key struct{ sub, exec string }
	last := map[key][]int{} // the two previous lines of each execution on each subscription
	var out []string
	for i := range s.entries {
		c := s.fields(t, i)
		if c.Kind != "event" || c.Filtered || c.ExecutionID == "" {
			continue
		}
		k := key{c.Subscription, c.ExecutionID}
		if p := last[k]; len(p) == 2 {
			a, b := s.fields(t, p[0]), s.fields(t, p[1])
			if a.Sequence+1 == b.Sequence && b.Sequence+1 == c.Sequence {
				out = append(out, s.entries[p[1]].label)
			}
		}
		last[k] = append(last[k], i)
		if len(last[k]) > 2 {
			last[k] = last[k][1:]
		}
	}
	return out
}

// Each of a sample of events, dropped or duplicated, is named.
func TestRecordedHistoryDoctoredEvents(t *testing.T) {
	base := recorded(t)
	candidates := followed(t, base)
	if len(candidates) < 100 {
		t.Fatalf("only %d candidate events", len(candidates))
	}
	for k := 0; k < 3; k++ {
		label := candidates[k*len(candidates)/3]
		exec := base.fields(t, base.at(t, label)).ExecutionID
		s := recorded(t)
		s.drop(t, label)
		wantViolation(t, s.check(t), EventGap, exec)
		s = recorded(t)
		s.duplicate(t, label)
		wantViolation(t, s.check(t), EventDuplicate, exec, s.line(t, label), s.line(t, label+"#2"))
	}
}

// A read of an unfinished state, made again after the final reads found the
// execution terminal, is a stale read porcupine rejects.
func TestRecordedHistoryStaleRead(t *testing.T) {
	base := recorded(t)
	done := 0
	for i := 0; i < len(base.entries) && done < 2; i++ {
		f := base.fields(t, i)
		if f.Kind != "request" || f.Op != "get" || f.Status != 200 || f.Answer.State != "running" {
			continue
		}
		s := recorded(t)
		last := s.entries[len(s.entries)-1].label
		end := s.fields(t, len(s.entries)-1).T
		s.copyAs(t, s.entries[i].label, last, "stale", func(m map[string]any) {
			m["invoke"], m["complete"], m["t"] = end.Add(time.Second), end.Add(2*time.Second), end.Add(2*time.Second)
		})
		wantViolation(t, s.check(t), StaleRead, f.Answer.ID, s.line(t, "stale"))
		done++
	}
	if done == 0 {
		t.Fatal("no read of a running execution in the recorded history")
	}
}

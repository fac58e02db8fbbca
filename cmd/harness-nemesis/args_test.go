package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// Wrong arguments end the command with exit code 2 and a message naming what was wrong, before
// anything is started.
func TestArgumentsRefused(t *testing.T) {
	history := filepath.Join(t.TempDir(), "h.jsonl")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-seed", "1", "-faults", "kill,earthquake", "-caddy", "/bin/true", "-history", history}, `fault kind "earthquake"`},
		{[]string{"-seed", "1", "-store", "bolt", "-faults", "pg-crash", "-caddy", "/bin/true", "-history", history}, `fault kind "pg-crash": the bolt store runs`},
		{[]string{"-seed", "1", "-store", "sqlite", "-caddy", "/bin/true", "-history", history}, `store "sqlite"`},
		{[]string{"history.jsonl"}, "did you mean `harness-nemesis check FILE`"},
		{[]string{"-seed", "1", "-caddy", filepath.Join(t.TempDir(), "missing")}, "build it: go build -o bin/caddy"},
	} {
		var out, errs bytes.Buffer
		if code := runNemesis(c.args, &out, &errs); code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s%s", c.args, code, out.String(), errs.String())
		}
		if !strings.Contains(errs.String(), c.want) {
			t.Errorf("%v: stderr %q, want it to say %q", c.args, errs.String(), c.want)
		}
	}
}

// The seed and the command that replays it come first, whatever happens next.
func TestPlanPrintsTheReplay(t *testing.T) {
	var out, errs bytes.Buffer
	if code := runNemesis([]string{"-seed", "42", "-duration", "20s", "-plan"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	first, rest, _ := strings.Cut(out.String(), "\n")
	if want := "go run ./cmd/harness-nemesis -seed 42 -duration 20s -store postgres -lease 5s -clients 8 -nodes 3"; !strings.Contains(first, want) {
		t.Fatalf("first line %q, want the replay %q", first, want)
	}
	if strings.Count(rest, "\n") < 5 {
		t.Fatalf("the plan has fewer than 5 steps:\n%s", rest)
	}
}

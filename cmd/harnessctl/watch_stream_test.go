package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/internal/testutil"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// watchUntil runs harnessctl with args until its stdout has lines lines, then presses Ctrl-C,
// and returns the exit code and the lines.
func watchUntil(t *testing.T, base string, lines int, args ...string) (int, []string) {
	t.Helper()
	var stdout, stderr testutil.LockedBuffer
	ch := make(chan os.Signal, 1)
	a := &app{
		stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr,
		getenv: func(k string) string {
			if k == "HARNESS_URL" {
				return base
			}
			return ""
		},
		interrupts: func() (<-chan os.Signal, func()) { return ch, func() {} },
	}
	code := make(chan int, 1)
	go func() { code <- a.main(args) }()
	deadline := time.Now().Add(30 * time.Second) // a bound against hangs
	for strings.Count(stdout.String(), "\n") < lines {
		select {
		case c := <-code:
			t.Fatalf("harnessctl %v ended with %d before %d lines:\n%s\nstderr:\n%s", args, c, lines, stdout.String(), stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("harnessctl %v: %d lines after 30 s, want %d:\n%s", args, strings.Count(stdout.String(), "\n"), lines, stdout.String())
		}
	}
	ch <- os.Interrupt
	return <-code, strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
}

func TestWatchFollowsAConversationAndTheTenant(t *testing.T) {
	base := serve(t)
	c := sdkClient(t, base)
	ctx := t.Context()
	conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, input := range []string{"first turn", "second turn"} {
		res, err := c.Run(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: input}, sdk.RunHandlers{})
		if err != nil || !res.Succeeded() {
			t.Fatalf("Run: %v", err)
		}
	}
	all, err := c.ReplayConversation(ctx, conv.ID, sdk.FollowOptions{After: "0"}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	life, err := c.ReplayConversation(ctx, conv.ID, sdk.FollowOptions{After: "0", Lifecycle: true}, 1000)
	if err != nil {
		t.Fatal(err)
	}

	check := func(name string, lines []string, want []api.RuntimeEvent) string {
		t.Helper()
		if len(lines) != len(want) {
			t.Fatalf("%s: %d lines, want %d", name, len(lines), len(want))
		}
		var cursor string
		for i, line := range lines {
			var got struct {
				Cursor string           `json:"cursor"`
				Event  api.RuntimeEvent `json:"event"`
			}
			if err := json.Unmarshal([]byte(line), &got); err != nil || got.Cursor == "" || got.Event.ID != want[i].ID {
				t.Fatalf("%s: line %d = %s (%v); want event %s with its cursor", name, i, line, err, want[i].ID)
			}
			cursor = got.Cursor
		}
		return cursor
	}
	code, lines := watchUntil(t, base, len(all.Events), "watch", "--json", conv.ID)
	if code != exitOK {
		t.Fatalf("watch of a conversation ended with %d after Ctrl-C; want 0", code)
	}
	cursor := check("conversation", lines, all.Events)

	code, lines = watchUntil(t, base, len(life.Events), "watch", "--all", "--lifecycle", "--json", "--after", "0")
	if code != exitOK {
		t.Fatalf("watch --all ended with %d", code)
	}
	check("tenant, lifecycle", lines, life.Events)

	// --after goes on exactly from a printed cursor: a third turn, and only it.
	third, err := c.Run(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "third"}, sdk.RunHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	events, _ := c.ListEvents(ctx, third.Execution.ID, 0, 0)
	code, lines = watchUntil(t, base, len(events.Events), "watch", "--json", "--after", cursor, conv.ID)
	if code != exitOK {
		t.Fatalf("watch --after ended with %d", code)
	}
	check("after a cursor", lines, events.Events)

	// The human form: one line per event.
	code, lines = watchUntil(t, base, 1, "watch", "--lifecycle", "--type", "run.completed", conv.ID)
	if code != exitOK || !strings.Contains(lines[0], "run.completed") || !strings.Contains(lines[0], all.Events[0].ExecutionID) {
		t.Fatalf("human line %q (exit %d)", lines[0], code)
	}
}

func TestWatchStreamUsage(t *testing.T) {
	base := serve(t)
	for _, args := range [][]string{
		{"watch", "--all", "exec_00000000000000000000000000000000"},
		{"watch", "--lifecycle", "exec_00000000000000000000000000000000"},
		{"watch", "--conversation", "conv_00000000000000000000000000000000", "conv_00000000000000000000000000000000"},
	} {
		s := ctl(t, base, "", 0, args...)
		s.expect(t, exitUsage)
	}
	// A bad cursor is the server's 400, said once.
	s := ctl(t, base, "", 0, "watch", "--all", "--after", "nonsense")
	if s.code != exitError || !strings.Contains(s.stderr.String(), "cursor") {
		t.Fatalf("exit %d, stderr %s", s.code, s.stderr.String())
	}
}

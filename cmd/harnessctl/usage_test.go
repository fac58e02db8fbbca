package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestUsage: usage prints the totals, grouped with --by, as JSON with --json, and refuses a
// grouping the server does not have before asking.
func TestUsage(t *testing.T) {
	base := serve(t)
	c := sdkClient(t, base)
	ctx := context.Background()
	conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "x y",
		Config: api.JSONObject{"usage": map[string]any{"inputTokens": 5, "outputTokens": 1, "cost": "0.25", "currency": "EUR"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitForTerminal(ctx, res.ID); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string // lines of the table, fields separated by single spaces
	}{
		{[]string{"usage"}, []string{"TOTAL EXECUTIONS INPUT OUTPUT CACHED THOUGHT TOTAL TOKENS COST", "total 1 15 3 0 0 18 0.75 EUR"}},
		{[]string{"usage", "--by", "provider", "--since", "1h"}, []string{"PROVIDER EXECUTIONS INPUT OUTPUT CACHED THOUGHT TOTAL TOKENS COST", "mock 1 15 3 0 0 18 0.75 EUR", "(all) 1 15 3 0 0 18 0.75 EUR"}},
	} {
		s := ctl(t, base, "", 0, tc.args...)
		s.expect(t, exitOK)
		lines := strings.Split(strings.TrimSpace(s.stdout.String()), "\n")[1:] // after "from … to …"
		for i, l := range lines {
			lines[i] = strings.Join(strings.Fields(l), " ")
		}
		if strings.Join(lines, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%v:\n%s\nwant\n%s", tc.args, strings.Join(lines, "\n"), strings.Join(tc.want, "\n"))
		}
	}
	s := ctl(t, base, "", 0, "usage", "--by", "conversation", "--json")
	s.expect(t, exitOK)
	var report api.UsageReport
	if err := json.Unmarshal(s.stdout.Bytes(), &report); err != nil || len(report.Groups) != 1 || report.Groups[0].Key != conv.ID {
		t.Errorf("--json: %v %s", err, s.stdout.String())
	}
	ctl(t, base, "", 0, "usage", "--by", "week").expect(t, exitUsage)
}

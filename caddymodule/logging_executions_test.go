package caddymodule

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// A provider's or the webhooks' log line about an execution carries execution_id and tenant,
// found in the process's open runtime.
func TestProviderLogLinesCarryExecutionFields(t *testing.T) {
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	openRuntimes.Store(rt, struct{}{})
	t.Cleanup(func() { openRuntimes.Delete(rt) })

	ctx := backend.WithTenant(context.Background(), backend.Tenant{ID: "acme"})
	conv, err := rt.CreateConversation(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// It waits for an approval: running until the test ends.
	exec, _, err := rt.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: mock.ID,
		Config: api.JSONObject{"requireApproval": true}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	log := executionLogger(slog.New(slog.NewJSONHandler(&out, nil))).With("provider", "remote")
	log.Info("upstream did not take the forwarded answer", "execution", exec.ID, "error", "x")

	var fields map[string]any
	if err := json.Unmarshal(out.Bytes(), &fields); err != nil {
		t.Fatal(err)
	}
	if fields["execution_id"] != exec.ID || fields["tenant"] != "acme" || fields["provider"] != "remote" {
		t.Errorf("log line %s: want execution_id %s, tenant acme, provider remote", out.String(), exec.ID)
	}
}

package backend_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/cluster"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/backend/webhook"
	"github.com/harness-edge/harness-edge/internal/pgtest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// openPostgresNode opens a runtime over the PostgreSQL database dsn as node name: one node of a
// cluster. The runtime closes the store.
func openPostgresNode(t testing.TB, dsn, name string, opts backend.Options) *backend.Runtime {
	t.Helper()
	st, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, Node: name})
	if err != nil {
		t.Fatalf("open the postgres store as %s: %v", name, err)
	}
	opts.Store = st
	opts.Cluster = cluster.New(st, cluster.Options{})
	if opts.Providers == nil {
		opts.Providers = []backend.Provider{mock.New()}
	}
	rt, err := backend.Open(opts)
	if err != nil {
		t.Fatalf("Open %s: %v", name, err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// Two nodes share one PostgreSQL outbox, and each runs a sender: every notification is delivered
// by one of them, exactly once acknowledged, in order per execution, whichever node committed it
// (docs/webhooks.md, "Several nodes").
func TestWebhooksOnPostgresOneSenderPerRow(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	const executions = 300
	rc, srv := newReceiver(t, func(attempt int, _ api.WebhookPayload) int {
		if attempt%7 == 3 {
			return http.StatusServiceUnavailable // a retry, from whichever node claims the row next
		}
		return http.StatusNoContent
	})
	node := func(name string) *backend.Runtime {
		return openPostgresNode(t, dsn, name, backend.Options{Webhooks: notifier(t, webhook.Config{
			Subscriptions: []webhook.Subscription{{
				URL: srv.URL, Secret: webhookSecret, Events: []string{"run.started", "run.completed"},
			}},
			Delivery: fastRetries,
		})})
	}
	nodes := []*backend.Runtime{node("node-a"), node("node-b")}
	// Each node runs half the executions; either node's sender may deliver any notification.
	runMockExecutions(t, executions, 16, nodes...)
	eventually(t, "every notification delivered", func() bool { return len(rc.delivered()) >= 2*executions })
	eventually(t, "an empty outbox", func() bool { return pendingWebhooks(t, nodes[0]) == 0 })
	checkStartedThenCompleted(t, rc.delivered(), executions) // a duplicate: two senders took one row
}

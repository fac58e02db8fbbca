package backend_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// statefulProvider is the mock provider keeping state per conversation (Run.SaveState under the
// conversation id), as the acp provider keeps its native session, and forgetting it when
// retention asks.
type statefulProvider struct {
	backend.Provider

	mu        sync.Mutex
	found     map[string]bool // execution id → whether its conversation's state was there
	forgotten []string
}

func (p *statefulProvider) Run(ctx context.Context, run *backend.Run) (backend.Result, error) {
	_, found, err := run.LoadState(run.ConversationID())
	if err != nil {
		return backend.Result{}, err
	}
	p.mu.Lock()
	p.found[run.ExecutionID()] = found
	p.mu.Unlock()
	if err := run.SaveState(run.ConversationID(), []byte(run.ExecutionID())); err != nil {
		return backend.Result{}, err
	}
	return p.Provider.Run(ctx, run)
}

func (p *statefulProvider) ForgetConversation(_ context.Context, conversationID string) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forgotten = append(p.forgotten, conversationID)
	return []string{conversationID}, nil
}

func (p *statefulProvider) foundState(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.found[id]
}

// Retention forgets a conversation once it has removed the conversation's last execution: the
// providers that keep state for conversations are asked once, and the state keys they name are
// deleted. A conversation with an execution left is not forgotten, and keeps its state.
func TestRetentionForgetsConversationsWithoutExecutions(t *testing.T) {
	p := &statefulProvider{Provider: mock.New(), found: map[string]bool{}}
	rt := openRuntime(t, "", backend.Options{Retention: time.Hour, Providers: []backend.Provider{p}})
	gone, kept := newConversation(t, rt), newConversation(t, rt)
	runToEnd(t, rt, gone, "one")
	if second := runToEnd(t, rt, gone, "two"); !p.foundState(second.ID) {
		t.Fatal("the second execution did not find the state the first saved")
	}
	runToEnd(t, rt, kept, "expires")
	live := start(t, rt, kept, startOpts{input: "stays", config: api.JSONObject{"requireApproval": true}})
	waitForEvent(t, rt, live.ID, api.StandardEventTypeActionRequired)

	if n, err := backend.SweepExpired(rt, time.Now().Add(2*time.Hour)); err != nil || n != 3 {
		t.Fatalf("sweep: %d, %v; want the 3 finished executions", n, err)
	}
	p.mu.Lock()
	forgotten := slices.Clone(p.forgotten)
	p.mu.Unlock()
	if !slices.Equal(forgotten, []string{gone}) {
		t.Fatalf("forgotten %v, want only %s (once)", forgotten, gone)
	}
	if again := runToEnd(t, rt, gone, "three"); p.foundState(again.ID) {
		t.Fatal("the forgotten conversation's state is still there")
	}
	if again := runToEnd(t, rt, kept, "four"); !p.foundState(again.ID) {
		t.Fatal("the state of a conversation with an execution left was deleted")
	}
}

package backend

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// countingStore counts the execution reads that reach the store.
type countingStore struct {
	store.Store
	executionReads atomic.Int64
}

func (s *countingStore) Execution(id string) (store.Execution, bool, error) {
	s.executionReads.Add(1)
	return s.Store.Execution(id)
}

// waitingProvider runs until its execution is cancelled.
type waitingProvider struct{}

func (waitingProvider) Manifest() api.ProviderManifest {
	return api.ProviderManifest{
		ID: "waiting", Name: "Waiting", Version: "0.0.1",
		ProtocolVersion: api.ProviderManifestProtocolVersionN20260902,
		Topologies:      []api.RuntimeTopology{api.RuntimeTopologyEmbedded},
		Capabilities:    map[string]api.SupportLevel{},
	}
}

func (waitingProvider) Run(ctx context.Context, _ *Run) (Result, error) {
	<-ctx.Done()
	return Result{}, context.Cause(ctx)
}

// TestForeignLookupCostsWhatAnUnknownOneCosts: another tenant's execution — live, or finished
// and served from memory — costs one store read, exactly as an unknown id does, although the
// owner's own reads of those two are answered from memory without one.
func TestForeignLookupCostsWhatAnUnknownOneCosts(t *testing.T) {
	rt, err := openInDir(t.TempDir(), Options{Providers: []Provider{waitingProvider{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	counting := &countingStore{Store: rt.store}
	rt.store = counting
	alice := WithTenant(context.Background(), Tenant{ID: "alice"})
	bob := WithTenant(context.Background(), Tenant{ID: "bob"})
	conv, err := rt.CreateConversation(alice, nil)
	if err != nil {
		t.Fatal(err)
	}
	startOne := func() string {
		exec, _, err := rt.StartExecution(alice, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "waiting", Input: "x"})
		if err != nil {
			t.Fatal(err)
		}
		return exec.ID
	}
	live, finished := startOne(), startOne()
	if _, err := rt.CancelExecution(alice, finished, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := rt.finishedLogs.get(finished); !ok {
		t.Fatal("the cancelled execution is not served from memory; the test would prove nothing")
	}
	reads := func(ctx context.Context, id string) (int64, error) {
		before := counting.executionReads.Load()
		_, err := rt.GetExecution(ctx, id)
		return counting.executionReads.Load() - before, err
	}
	for name, tc := range map[string]struct {
		ctx   context.Context
		id    string
		reads int64
		found bool
	}{
		"unknown":        {bob, "exec_0123456789abcdef0123456789abcdef", 1, false},
		"foreign live":   {bob, live, 1, false},
		"foreign cached": {bob, finished, 1, false},
		"own live":       {alice, live, 0, true},
		"own cached":     {alice, finished, 0, true},
	} {
		n, err := reads(tc.ctx, tc.id)
		if n != tc.reads || (err == nil) != tc.found {
			t.Errorf("%s: %d store reads, error %v; want %d reads, found %v", name, n, err, tc.reads, tc.found)
		}
	}
}

package backend

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// conversationCountingStore counts the conversation reads that reach the store.
type conversationCountingStore struct {
	store.Store
	conversationReads atomic.Int64
}

func (s *conversationCountingStore) Conversation(id string) (store.Conversation, bool, error) {
	s.conversationReads.Add(1)
	return s.Store.Conversation(id)
}

// A start on its tenant's conversation reads no conversation from the store once the runtime
// has seen it (created here, or read once after a restart); a start on another tenant's
// conversation, or on an unknown one, reads the store and is NOT_FOUND, both the same way.
func TestStartsCheckKnownConversationsWithoutAStoreRead(t *testing.T) {
	dir := t.TempDir()
	rt, err := openInDir(dir, Options{Providers: []Provider{waitingProvider{}}})
	if err != nil {
		t.Fatal(err)
	}
	alice := WithTenant(context.Background(), Tenant{ID: "alice"})
	bob := WithTenant(context.Background(), Tenant{ID: "bob"})
	conv, err := rt.CreateConversation(alice, nil)
	if err != nil {
		t.Fatal(err)
	}
	startReads := func(rt *Runtime, ctx context.Context, convID string) (int64, error) {
		counting := &conversationCountingStore{Store: rt.store}
		rt.store, rt.conversationDesk.store = counting, counting
		defer func() { rt.store, rt.conversationDesk.store = counting.Store, counting.Store }()
		exec, _, err := rt.StartExecution(ctx, api.StartExecutionRequest{ConversationID: convID, ProviderID: "waiting", Input: "x"})
		if err == nil {
			if _, err := rt.CancelExecution(ctx, exec.ID, nil); err != nil {
				t.Fatal(err)
			}
		}
		return counting.conversationReads.Load(), err
	}
	for name, tc := range map[string]struct {
		ctx   context.Context
		conv  string
		reads int64
		found bool
	}{
		"own":     {alice, conv.ID, 0, true},
		"foreign": {bob, conv.ID, 1, false},
		"unknown": {alice, "conv_0123456789abcdef0123456789abcdef", 1, false},
	} {
		n, err := startReads(rt, tc.ctx, tc.conv)
		var rerr *Error
		if n != tc.reads || (err == nil) != tc.found || (!tc.found && (!errors.As(err, &rerr) || rerr.Code != CodeNotFound)) {
			t.Errorf("%s: %d conversation reads, error %v; want %d reads, found %v", name, n, err, tc.reads, tc.found)
		}
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}

	// After a restart the first start reads the conversation, the next ones do not.
	rt, err = openInDir(dir, Options{Providers: []Provider{waitingProvider{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for i, want := range []int64{1, 0} {
		if n, err := startReads(rt, alice, conv.ID); err != nil || n != want {
			t.Errorf("start %d after a restart: %d conversation reads, %v; want %d", i+1, n, err, want)
		}
	}
}

package backend

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// cancellingResumer records the order of its Resume and Cancel calls.
type cancellingResumer struct {
	mu    sync.Mutex
	calls []string
	live  bool // Resume saw a live context
}

func (p *cancellingResumer) Manifest() api.ProviderManifest {
	return api.ProviderManifest{ID: "resumable", Name: "Resumable", Version: "0.0.1",
		ProtocolVersion: api.ProviderManifestProtocolVersionN20260902,
		Topologies:      []api.RuntimeTopology{api.RuntimeTopologyRemote}}
}

func (p *cancellingResumer) Run(ctx context.Context, _ *Run) (Result, error) { return Result{}, nil }

func (p *cancellingResumer) Resume(ctx context.Context, _ *Run) (Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, "resume")
	p.live = ctx.Err() == nil
	return Result{}, ctx.Err()
}

func (p *cancellingResumer) Cancel(context.Context, string, string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, "cancel")
	return nil
}

// TestResumeFinishesAnInterruptedCancel: an execution the previous process left cancelling (it
// stopped while the cleanup hook ran; written here straight into a real store file) is finished
// as cancelled, after Resume re-attached with a cancelled context so that the cleanup hook that
// follows knows what to stop.
func TestResumeFinishesAnInterruptedCancel(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := now()
	conv := api.Conversation{ID: newID(conversationIDPrefix), CreatedAt: at, Metadata: api.JSONObject{}}
	id := newExecutionID()
	rec := store.Execution{Execution: api.Execution{ID: id, ConversationID: conv.ID, ProviderID: "resumable",
		State: api.ExecutionStateCancelling, RequiredCapabilities: []string{}, EffectiveConfig: api.JSONObject{},
		CreatedAt: at, UpdatedAt: at, StartedAt: &at}}
	batch := &store.Batch{Conversations: []store.Conversation{{Conversation: conv}}, Executions: []store.Execution{rec}}
	for seq, typ := range []api.StandardEventType{api.StandardEventTypeRunQueued, api.StandardEventTypeRunStarted} {
		data := mustData(map[string]string{"providerId": "resumable"})
		batch.Events = append(batch.Events, store.StoredEvent{ExecutionID: id,
			Event: Event{Sequence: int64(seq + 1), Type: typ, JSON: encodeEvent(id, int64(seq+1), typ, at, data)}})
	}
	if err := st.Commit(batch); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	p := &cancellingResumer{}
	rt, err := openInDir(dir, Options{Providers: []Provider{p}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var last api.RuntimeEvent
	for ev, err := range FollowExecution(ctx, rt, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if last, err = ev.Decode(); err != nil {
			t.Fatal(err)
		}
	}
	exec, err := rt.GetExecution(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if exec.State != api.ExecutionStateCancelled || last.Type != api.StandardEventTypeRunCancelled || last.Sequence != 3 {
		t.Fatalf("state %s, last event %s #%d", exec.State, last.Type, last.Sequence)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Equal(p.calls, []string{"resume", "cancel"}) || p.live {
		t.Fatalf("calls %v (live context %v), want resume (cancelled) then cancel", p.calls, p.live)
	}
}

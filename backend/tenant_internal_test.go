package backend

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestIdempotencyKeysAreTenantScoped: the store key of an idempotency record keeps the
// pre-tenancy form for the anonymous tenant (older files still replay), and no two (tenant,
// conversation, key) triples share a key, even with tenant names chosen to look like another
// tenant's key with separators in it.
func TestIdempotencyKeysAreTenantScoped(t *testing.T) {
	const conv = "conv_0123456789abcdef0123456789abcdef"
	if got := idempotencyKey("", conv, "k"); string(got) != conv+"\x00k" {
		t.Fatalf("anonymous key %q changed form", got)
	}
	triples := [][3]string{
		{"", conv, "k"}, {"alice", conv, "k"}, {"bob", conv, "k"},
		{"alice" + conv, conv, "k"}, {"alice", conv, "k\x00x"}, {"alice\x00" + conv + "\x00k", conv, ""},
		{"\x01", conv, "k"}, {"a", conv, "\x01k"}, {conv, "", "k"},
	}
	seen := map[string][3]string{}
	for _, tr := range triples {
		key := string(idempotencyKey(tr[0], tr[1], tr[2]))
		if prev, dup := seen[key]; dup {
			t.Fatalf("%q and %q share the key %q", prev, tr, key)
		}
		seen[key] = tr
	}
}

// TestIdempotencyRecordIsFoundOnlyByItsTenant: a record stored for alice is not found by bob or
// the anonymous tenant on the same conversation and key, also after a reopen.
func TestIdempotencyRecordIsFoundOnlyByItsTenant(t *testing.T) {
	dir := t.TempDir()
	s, err := openBoltStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	const conv = "conv_0123456789abcdef0123456789abcdef"
	rec := idempotencyRecord{Tenant: "alice", ConversationID: conv, Key: "k", Fingerprint: "f", ExecutionID: "exec_a"}
	if err := s.Commit(&storeBatch{idempotency: []idempotencyRecord{rec}}); err != nil {
		t.Fatal(err)
	}
	check := func() {
		t.Helper()
		for _, tenant := range []string{"bob", ""} {
			if _, found, err := s.Idempotency(tenant, conv, "k"); err != nil || found {
				t.Fatalf("tenant %q found alice's record (%v)", tenant, err)
			}
		}
		got, found, err := s.Idempotency("alice", conv, "k")
		if err != nil || !found || got != rec {
			t.Fatalf("alice's record: %+v, found %v, %v", got, found, err)
		}
	}
	check()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = openBoltStore(dir, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check()
	if !bytes.HasPrefix(idempotencyKey("alice", conv, "k"), []byte{0x01}) {
		t.Fatal("a tenant's key must not start like a conversation id")
	}
}

// countingStore counts the execution reads that reach the store.
type countingStore struct {
	store
	executionReads atomic.Int64
}

func (s *countingStore) Execution(id string) (executionRecord, bool, error) {
	s.executionReads.Add(1)
	return s.store.Execution(id)
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
	rt, err := Open(Options{Dir: t.TempDir(), Providers: []Provider{waitingProvider{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	counting := &countingStore{store: rt.store}
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

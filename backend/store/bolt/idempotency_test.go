package bolt

import (
	"bytes"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
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
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const conv = "conv_0123456789abcdef0123456789abcdef"
	rec := store.Idempotency{Tenant: "alice", ConversationID: conv, Key: "k", Fingerprint: "f", ExecutionID: "exec_a"}
	if err := s.Commit(&store.Batch{Idempotency: []store.Idempotency{rec}}); err != nil {
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
	if s, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check()
	if !bytes.HasPrefix(idempotencyKey("alice", conv, "k"), []byte{0x01}) {
		t.Fatal("a tenant's key must not start like a conversation id")
	}
}
